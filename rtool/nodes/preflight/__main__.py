"""`python -m rtool.nodes.preflight ...`: the checks of this node (see rtool/nodes/preflight/node.py)."""

import sys

from rtool.nodes.preflight.node import main

sys.exit(main())
