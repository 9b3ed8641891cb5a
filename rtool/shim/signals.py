"""Signal handlers of the shim: they only record the signal and wake the step path.

Installed from the main thread only. In a forked child (a DataLoader worker, a fork-started
pool) the previous handlers come back at once (os.register_at_fork), so the child neither acts
nor shows the signal as caught in /proc/PID/status SigCgt (the batch script's forwarding skips
it); a handler that still runs in another process takes the signal's default action.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import weakref
from collections.abc import Callable
from typing import Any

log = logging.getLogger("rtool.shim")


class SignalFlags:
    """Handlers for `sigs`; `on_signal(name)` runs in the main thread, between bytecodes."""

    def __init__(self, sigs: tuple[signal.Signals, ...], on_signal: Callable[[str], None]) -> None:
        self._on_signal = on_signal
        self._pid = os.getpid()
        self._old: dict[signal.Signals, Any] = {}
        if not sigs:
            return
        if threading.current_thread() is not threading.main_thread():
            log.warning("rtool.shim: Guard made outside the main thread: signals not handled")
            return
        for sig in sigs:
            self._old[sig] = signal.signal(sig, self._handle)
        ref = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: _restore_in_child(ref))

    def _handle(self, signum: int, frame: object) -> None:
        if os.getpid() != self._pid:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        self._on_signal(signal.Signals(signum).name)

    def restore(self) -> None:
        """Put the previous handlers back (main thread only; idempotent)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, old in self._old.items():
            with contextlib.suppress(ValueError, TypeError, OSError):
                signal.signal(sig, old)
        self._old.clear()


def _restore_in_child(ref: weakref.ReferenceType[SignalFlags]) -> None:
    flags = ref()
    if flags is not None:
        flags.restore()
