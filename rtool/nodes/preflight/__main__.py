"""`python -m rtool.nodes.preflight ...`: the checks of this node (see node.py)."""

import sys

from rtool.nodes.preflight.node import main

sys.exit(main())
