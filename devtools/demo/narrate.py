"""Narration: time-stamped lines as things happen, and a spinner saying what the demo waits for.

While waiting, `Narrator.wait` also calls the `background` hook (new alerts, watchdog lines),
so what arrives is printed the moment it is seen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from rich.console import Console
from rich.markup import escape

T = TypeVar("T")


class WaitTimeout(Exception):
    """A wait ran past its timeout; the message says what was awaited."""


class Narrator:
    def __init__(self, console: Console | None = None, poll: float = 0.25) -> None:
        self.console = console or Console(highlight=False)
        self.poll = poll
        self.start = time.monotonic()
        self.background: Callable[[], None] = lambda: None
        self.root = ""  # shown relative to this folder

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def _say(self, mark: str, text: str, style: str = "") -> None:
        stamp = f"[dim]{self.elapsed():6.1f}s[/dim]"
        text = escape(text.replace(self.root + "/", "") if self.root else text)
        body = f"[{style}]{text}[/{style}]" if style else text
        self.console.print(f"{stamp} {mark} {body}")

    def title(self, text: str) -> None:
        self.console.print()
        self.console.rule(f"[bold]{escape(text)}[/bold]", align="left")

    def say(self, text: str) -> None:
        self._say("  ", text)

    def command(self, argv: str) -> None:
        self._say("[cyan]$[/cyan]", argv, "cyan")

    def ok(self, text: str) -> None:
        self._say("[green]✓[/green]", text)

    def fail(self, text: str) -> None:
        self._say("[red]✗[/red]", text, "red")

    def alert(self, channel: str, text: str) -> None:
        self._say("[yellow]✉[/yellow]", f"{channel}: {text}", "yellow")

    def note(self, text: str) -> None:
        self._say("[dim]·[/dim]", text, "dim")

    def wait(
        self,
        what: str,
        predicate: Callable[[], T | None],
        timeout: float,
    ) -> T:
        """Poll `predicate` until it returns a truthy value; WaitTimeout after `timeout` s."""
        t0 = time.monotonic()
        with self.console.status(f"waiting for {what}") as status:
            while True:
                self.background()
                value = predicate()
                if value:
                    return value
                waited = time.monotonic() - t0
                if waited > timeout:
                    raise WaitTimeout(f"{what}: nothing after {timeout:.0f}s")
                status.update(f"waiting for {escape(what)} ({waited:.0f}s)")
                time.sleep(self.poll)

    def pause(self, seconds: float, what: str) -> None:
        """Let time pass (printing what arrives meanwhile)."""
        end = time.monotonic() + seconds
        self.wait(what, lambda: time.monotonic() >= end, seconds + 5)
