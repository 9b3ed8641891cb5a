"""One module per command, `NAME_cmd.py`, registered by one line in `LINES`
(rtool/app/plumbing/lazy.py) and imported only when its command runs; a command's helpers sit
beside it without the suffix (preflight_job, run_switch)."""
