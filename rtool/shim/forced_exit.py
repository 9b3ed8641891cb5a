"""Forced exit of the shim: a save on the way out that does not return in time.

A daemon `threading.Timer` calls `on_fire()` (log, heartbeat) then `os._exit(code)` after
`timeout`; faulthandler's C-level watchdog is armed `BACKUP` seconds later as a backup for a save
stuck in C code that holds the GIL (it dumps every thread's traceback and exits 1). Note that
faulthandler.dump_traceback_later is process-wide: arming it replaces one the program set.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
import threading
import time
from collections.abc import Callable

#: Seconds after the timeout at which the C-level backup fires.
BACKUP = 30.0


class ForcedExit:
    def __init__(self, timeout: float, code: int, on_fire: Callable[[], None]) -> None:
        self.timeout = timeout
        self.code = code
        self._on_fire = on_fire
        self._timer: threading.Timer | None = None

    def arm(self) -> None:
        if self.timeout <= 0 or self._timer is not None:
            return
        timer = threading.Timer(self.timeout, self._fire)
        timer.daemon = True
        timer.start()
        self._timer = timer
        with contextlib.suppress(Exception):  # no usable stderr: the Python timer still works
            faulthandler.dump_traceback_later(self.timeout + BACKUP, exit=True)

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            with contextlib.suppress(Exception):
                faulthandler.cancel_dump_traceback_later()

    def _fire(self) -> None:
        with contextlib.suppress(Exception):
            self._on_fire()
        end_dumped(self.code)


def end_dumped(code: int, dump: bool = True) -> None:
    """End the process now with `code`, every thread's traceback on stderr first (unless
    `dump` is False: the stacks were written already)."""
    if dump:
        with contextlib.suppress(Exception):
            faulthandler.dump_traceback(all_threads=True)
    with contextlib.suppress(Exception):
        sys.stderr.flush()
        sys.stdout.flush()
    time.sleep(0)  # let a pending heartbeat write thread run
    os._exit(code)
