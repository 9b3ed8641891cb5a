"""`python -m devtools.localslurm up|down|status` (scripts/local-slurm): control.main."""

import sys

from devtools.localslurm.control import main

sys.exit(main())
