"""Signal handlers of the shim: they only record the signal and wake the step path.

Installed from the main thread only. A forked child (a DataLoader worker) gets the previous
handlers back at once (os.register_at_fork), so it neither acts nor shows the signal as caught
in /proc/PID/status SigCgt (the batch script's forwarding skips it); a handler that still runs
in another process takes the signal's default action. A Python handler runs only when the main
thread returns to the interpreter, so the shim also sets Python's wakeup fd (when nobody else
did): its thread reads it (`drain_wakeup`) and so sees a TERM the training never handles.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
import weakref
from typing import Any

from rtool.shim.state import Loop, Sources

log = logging.getLogger("rtool.shim")


class SignalFlags:
    """Handlers for `sigs`, run in the main thread between bytecodes: the signal goes into
    `sources` (`signal`, and the step path is woken; one of `deadline` goes to the monitor
    thread as `deadline_signal` instead; a TERM's time is noted for the unresponsive watch)."""

    def __init__(
        self,
        sigs: tuple[signal.Signals, ...],
        deadline: tuple[signal.Signals, ...],
        sources: Sources,
        loop: Loop,
    ) -> None:
        self.deadline, self.sources, self.loop = deadline, sources, loop
        self._pid = os.getpid()
        self._sigs = sigs
        self._old: dict[signal.Signals, Any] = {}
        self._prev: dict[signal.Signals, Any] = {}
        self._closed = False
        self._pipe: tuple[int, int] | None = None
        if not sigs:
            return
        if threading.current_thread() is not threading.main_thread():
            log.warning("rtool.shim: Guard made outside the main thread: signals not handled")
            return
        for sig in sigs:
            self._old[sig] = signal.signal(sig, self._handle)
        self._prev = dict(self._old)
        self._set_wakeup()
        ref = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: _restore_in_child(ref))

    def _set_wakeup(self) -> None:
        r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            prev = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        except (ValueError, OSError):
            prev = -2
        if prev != -1:  # another wakeup fd (asyncio...): keep it, read none
            if prev != -2:
                signal.set_wakeup_fd(prev)
            os.close(r)
            os.close(w)
            return
        self._pipe = (r, w)

    def _handle(self, signum: int, frame: object) -> None:
        if os.getpid() != self._pid:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if self._closed:  # put back by a framework after the guard closed: act as before us
            prev = self._prev.get(signal.Signals(signum), signal.SIG_DFL)
            if callable(prev):
                prev(signum, frame)
            elif prev != signal.SIG_IGN:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
            return
        self._note(signal.Signals(signum))

    def _note(self, sig: signal.Signals) -> None:
        s = self.sources
        if sig == signal.SIGTERM and s.term_at is None:
            s.term_at = time.monotonic()
        if sig in self.deadline:
            if s.deadline_signal is None:
                s.deadline_signal = sig.name
            return
        if s.signal is None:
            s.signal = sig.name
        self.loop.wake()

    def reinstall(self) -> None:
        """Take the signals back from handlers installed after ours (main thread only)."""
        if threading.current_thread() is not threading.main_thread() or not self._old:
            return
        for sig in self._sigs:
            if signal.getsignal(sig) != self._handle:
                signal.signal(sig, self._handle)

    def drain_wakeup(self) -> set[int]:
        """Signal numbers the C-level handler saw since the last call (any thread)."""
        if self._pipe is None:
            return set()
        try:
            data = os.read(self._pipe[0], 4096)
        except (BlockingIOError, OSError):
            return set()
        return set(data)

    def restore(self) -> None:
        """Put the previous handlers back (main thread only; idempotent)."""
        self._closed = True
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, old in self._old.items():
            with contextlib.suppress(ValueError, TypeError, OSError):
                signal.signal(sig, old)
        self._old.clear()
        if self._pipe is not None:
            r, w = self._pipe
            self._pipe = None
            with contextlib.suppress(ValueError, OSError):
                prev = signal.set_wakeup_fd(-1)
                if prev not in (w, -1):
                    signal.set_wakeup_fd(prev)  # someone replaced ours since: keep theirs
            os.close(r)
            os.close(w)


def _restore_in_child(ref: weakref.ReferenceType[SignalFlags]) -> None:
    flags = ref()
    if flags is not None:
        flags.restore()
