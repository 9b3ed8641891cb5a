"""The repository's tooling, never installed (not in the wheel): the local Slurm harness
(`devtools.localslurm`), the local stand-ins for Slack, PagerDuty and an SMTP relay
(`devtools.servers`) and the demo (`devtools.demo`, started by `scripts/demo`).

The tests, `bench/` and `scripts/` use it from a checkout (the repository root on `sys.path`).
It may import rtool; nothing under `rtool/` imports it (tests/test_structure.py).
"""
