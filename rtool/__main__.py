"""`python -I -m rtool ...` = the `rtool` command, where no console script is installed.

rtool runs itself this way only with `-I` (rtool.core.selfcmd): a bare `python -m rtool` puts
the current folder first on sys.path, so a `rtool.py` or `json.py` there would be imported.
"""

from rtool.app.cli import app

app()
