"""`python -m devtools.demo [--dir DIR] [--with-servers] [--keep]` (scripts/demo): run.main."""

import sys

from devtools.demo.run import main

sys.exit(main())
