"""What the demo watches for alerts: the log channel's file and, with --with-servers, a local
SMTP server and a local Slack-like server (devtools.servers) that record what they accept."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devtools.demo.observe import read_text
from devtools.servers import SlackLikeServer, SmtpServer
from rtool.core.errors import RtoolError


@dataclass(frozen=True)
class Message:
    channel: str  # log | email | slack
    title: str  # the subject / the text / the log line

    @property
    def resolved(self) -> bool:
        return "RESOLVED" in self.title


class Inbox:
    """Every notification delivered so far, per channel; `new()` gives the unseen ones."""

    def __init__(self, alerts_log: Path) -> None:
        self.alerts_log = alerts_log
        self.smtp: Any = None
        self.slack: Any = None
        self._seen: dict[str, int] = {}

    def start_servers(self) -> tuple[int, str]:
        """Start the SMTP and Slack-like servers; returns (SMTP port, Slack webhook URL)."""
        try:
            self.smtp = SmtpServer(mode="accept").start()
        except ImportError:
            raise RtoolError(
                "--with-servers needs aiosmtpd (pip install aiosmtpd, or scripts/setup)"
            ) from None
        self.slack = SlackLikeServer().start()
        return int(self.smtp.port), str(self.slack.webhook_url)

    def stop(self) -> None:
        for server in (self.smtp, self.slack):
            if server is not None:
                server.stop()

    @property
    def channels(self) -> list[str]:
        return ["log", *(["email", "slack"] if self.smtp is not None else [])]

    def alert_lines(self) -> list[str]:
        """The log channel's lines as written (with every field of the alert)."""
        return _lines(self.alerts_log)

    def all(self) -> list[Message]:
        out = [Message("log", log_title(line)) for line in _lines(self.alerts_log)]
        if self.smtp is not None:
            out += [Message("email", str(m["Subject"])) for m in list(self.smtp.messages)]
        if self.slack is not None:
            accepted = list(self.slack.accepted)
            out += [Message("slack", str(r["body"].get("text") or r["body"])) for r in accepted]
        return out

    def new(self) -> list[Message]:
        """Messages delivered since the last call (each channel's list only grows)."""
        fresh: list[Message] = []
        everything = self.all()
        for channel in self.channels:
            mine = [m for m in everything if m.channel == channel]
            fresh += mine[self._seen.get(channel, 0) :]
            self._seen[channel] = len(mine)
        return fresh

    def tally(self) -> dict[str, dict[str, int]]:
        """Per channel: alerts (any status but OK) and resolved notices delivered."""
        out = {c: {"alert": 0, "resolved": 0} for c in self.channels}
        for m in self.all():
            out[m.channel]["resolved" if m.resolved else "alert"] += 1
        return out

    def received(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {c: [] for c in self.channels}
        for m in self.all():
            out[m.channel].append(m.title)
        return out


_LOG_LINE = re.compile(r"^\S+ (\[rtool .*?)(?: key=\S+.*)?$")


def log_title(line: str) -> str:
    """`2024-05-01T10:00:00 [rtool CRITICAL] disk /x: 91% used key=disk:/x ...` -> the title."""
    m = _LOG_LINE.match(line)
    return m[1] if m else line


def _lines(path: Path) -> list[str]:
    return [ln for ln in read_text(path).splitlines() if ln.strip()]
