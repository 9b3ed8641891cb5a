"""`python -m devtools.demo [--dir DIR] [--with-servers] [--keep]` (scripts/demo): run.main."""

from devtools.demo.run import main

raise SystemExit(main())
