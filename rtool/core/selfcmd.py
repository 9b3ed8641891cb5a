"""How rtool starts itself (cron ticks, the pre-flight and the records inside a job, the demo).

Never `python -c ...` or a bare `python -m rtool`: both put the current folder first on
`sys.path`, so a `notify.py`, `json.py` or `rtool.py` in the submit folder or the cron root
would be imported instead of rtool's own code. rtool runs the console script installed beside
its interpreter, else `python -I -m rtool` (isolated: neither the current folder nor PYTHON*
variables reach `sys.path`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def console_script() -> Path | None:
    """The `rtool` console script installed beside the running interpreter, else the one
    this process was started as (`pip install --user` puts it in ~/.local/bin), if any."""
    for script in (Path(sys.executable).with_name("rtool"), Path(os.path.abspath(sys.argv[0]))):
        if script.name == "rtool" and script.is_file() and os.access(script, os.X_OK):
            return script
    return None


def rtool_argv() -> list[str]:
    """The absolute command that runs this rtool, safe to run in any folder."""
    script = console_script()
    return [str(script)] if script is not None else python_argv("-m", "rtool")


def python_argv(*args: str) -> list[str]:
    """This interpreter in isolated mode: `python_argv("-m", "rtool.nodes.preflight")`,
    `python_argv("-c", CODE, ARG)`. Every Python child rtool starts goes through here."""
    return [sys.executable, "-I", *args]
