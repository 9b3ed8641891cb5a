"""The log channel: one line per notification, appended to a file, stderr ("-") or stdout.

Used for the demo, for users without Slack or email, and as the default fallback.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from rtool.core.config.fields import setting
from rtool.core.safeio import UnsafeFileError, append_fd
from rtool.notify.channels.base import ALL, ChannelSection, DeliveryError, Envelope, Receipt
from rtool.notify.channels.notification import subject


def format_line(env: Envelope) -> str:
    """`2024-05-01T10:00:00 [rtool CRITICAL] disk /scratch: 91% used ... key=disk:/scratch ...`."""
    n = env.notification
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(n.time))
    parts = [stamp, subject(n), f"key={n.key}"]
    parts += [f"{k}={v}" for k, v in sorted(n.fields.items())]
    if env.note:
        parts.append(f"({env.note})")
    return " ".join(p.replace("\n", " ") for p in parts)


class LogConfig(ChannelSection):
    path: str = setting(
        "-", 'File to append one line per notification to; "-" = stderr, "stdout" = stdout.'
    )


class LogChannel:
    """One line per notification, appended to a file or stderr; the default fallback."""

    name = "log"
    config = LogConfig
    #: Works without a [notify.log] section: stderr, every status (the default fallback).
    unconfigured: LogConfig | None = LogConfig(statuses=list(ALL))

    def __init__(self, cfg: LogConfig) -> None:
        self.cfg = cfg

    def send(self, envelope: Envelope) -> Receipt:
        line = format_line(envelope) + "\n"
        if self.cfg.path in ("-", "stderr", "stdout"):
            stream = sys.stdout if self.cfg.path == "stdout" else sys.stderr
            stream.write(line)
            stream.flush()
            return Receipt(detail="stdout" if self.cfg.path == "stdout" else "stderr")
        path = Path(self.cfg.path).expanduser()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = append_fd(path)  # never through a symlink, never into a FIFO
            try:
                os.write(fd, line.encode())
                os.fsync(fd)
            finally:
                os.close(fd)
        except (OSError, UnsafeFileError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise DeliveryError(f"cannot append to {path}: {why}", permanent=False) from None
        return Receipt(detail=str(path))
