"""`python -m nodes.preflight ...`: the checks of this node (see nodes.preflight.node)."""

import sys

from rtool.nodes.preflight.node import main

sys.exit(main())
