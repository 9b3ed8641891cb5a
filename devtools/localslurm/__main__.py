"""`python -m devtools.localslurm up|down|status` (scripts/local-slurm): control.main."""

from devtools.localslurm.control import main

raise SystemExit(main())
