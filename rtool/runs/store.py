"""The ledgers in the state dir: `runs/<name>.json`, one per run, written atomically."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
from typing import Any

from rtool import __version__
from rtool.core.errors import RtoolError
from rtool.core.state import StateDir
from rtool.runs.model import LEDGER_FORMAT, Ledger
from rtool.runs.totals import fold

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def ledger_file(run: str) -> str:
    """The state-dir path of a run's ledger (names that are not plain get a hashed file)."""
    if _SAFE.fullmatch(run):
        return f"runs/{run}.json"
    digest = hashlib.sha256(run.encode()).hexdigest()[:16]
    return f"runs/run-{digest}.json"


class LedgerFormatError(RtoolError):
    """A ledger written by a newer rtool in a layout this one does not know."""


def load(state: StateDir, run: str) -> Ledger | None:
    """The stored ledger of `run`, None when there is none (or not a ledger). A ledger in a
    newer format raises LedgerFormatError (one line: which rtool wrote it, what to do)."""
    data: Any = state.read_json(ledger_file(run))
    if not isinstance(data, dict) or data.get("run") != run:
        return None
    found = data.get("format", 1)
    if not isinstance(found, int) or isinstance(found, bool) or found > LEDGER_FORMAT:
        by = str(data.get("rtool_version") or "a newer rtool")[:40]
        raise LedgerFormatError(
            f"{state.path / ledger_file(run)}: run ledger format {found!r} (written by rtool "
            f"{by}); rtool {__version__} reads format {LEDGER_FORMAT}: run the newer rtool, or "
            "remove the file (rtool rebuilds it from sacct and the run's records)"
        )
    try:
        return Ledger.from_json(data)
    except (TypeError, ValueError):
        return None


def save(state: StateDir, ledger: Ledger) -> None:
    """Write the ledger; one that would not fit the state file cap keeps fewer attempts in full
    (the rest folded into its totals), so it is never too big to read back."""
    ledger.rtool_version = __version__  # which rtool watched the run
    current = [ledger]

    def shrink(_: Any) -> Any:
        led = current[0]
        if len(led.attempts) <= 1:
            return None
        now = led.updated or time.time()
        attempts, folded = fold(led.attempts, led.folded, len(led.attempts) // 2, now)
        if len(attempts) == len(led.attempts):
            return None
        current[0] = dataclasses.replace(led, attempts=attempts, folded=folded)
        return current[0].to_json(compact=True)

    state.write_json(ledger_file(ledger.run), ledger.to_json(compact=True), shrink=shrink)
