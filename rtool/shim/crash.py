"""Uncaught exceptions: recorded (type, message, last traceback line) before the process dies.

`CrashHooks` chains `sys.excepthook` and `threading.excepthook`: ours records, then the
previous hook runs (prints the traceback as before). `restore()` puts the previous hooks back
when ours are still the installed ones (a hook installed after ours is left alone).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any

from rtool.core.heartbeat import ErrorInfo


def error_info(exc: BaseException, tb: TracebackType | None = None) -> ErrorInfo:
    """ErrorInfo of an exception: type, message (first 500 chars), innermost frame."""
    frames = traceback.extract_tb(tb if tb is not None else exc.__traceback__)
    last = ""
    if frames:
        f = frames[-1]
        last = f'File "{f.filename}", line {f.lineno}, in {f.name}'
    return ErrorInfo(type(exc).__name__, str(exc)[:500], last)


class CrashHooks:
    """`on_crash(info, main_thread)` runs for an exception nobody caught."""

    def __init__(self, on_crash: Callable[[ErrorInfo, bool], None]) -> None:
        self._on_crash = on_crash
        self._prev_sys = sys.excepthook
        self._prev_thread = threading.excepthook
        sys.excepthook = self._sys_hook
        threading.excepthook = self._thread_hook

    def _sys_hook(
        self, kind: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        with contextlib.suppress(Exception):
            self._on_crash(error_info(exc, tb), True)
        self._prev_sys(kind, exc, tb)

    def _thread_hook(self, args: Any) -> None:
        if args.exc_value is not None and not isinstance(args.exc_value, SystemExit):
            with contextlib.suppress(Exception):
                self._on_crash(error_info(args.exc_value, args.exc_traceback), False)
        self._prev_thread(args)

    def restore(self) -> None:
        if sys.excepthook == self._sys_hook:
            sys.excepthook = self._prev_sys
        if threading.excepthook == self._thread_hook:
            threading.excepthook = self._prev_thread
