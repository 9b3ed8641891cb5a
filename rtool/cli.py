"""`rtool.cli` of rtool 0.1, kept so that what 0.1 left behind still runs after an upgrade.

rtool 0.1 queued each cron tick, and wrote each scrontab line, as
`python -c 'import sys; from rtool.cli import app; app(sys.argv[1:])' ... cron tick`. The
command moved to `rtool.app.cli`; without this module a chain started by 0.1 would die at its
first tick after the upgrade. A tick that runs through here queues the next one with today's
command (the console script's absolute path), so a jobs chain heals itself; a scrontab line
stays as 0.1 wrote it until `rtool cron install` is run again (docs/upgrading.md).
"""

from rtool.app.cli import app, main

__all__ = ["app", "main"]
