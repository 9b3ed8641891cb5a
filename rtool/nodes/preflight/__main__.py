"""`python -I -m rtool.nodes.preflight ...`: this node's checks (rtool.nodes.preflight.node)."""

import sys

from rtool.nodes.preflight.node import main

sys.exit(main())
