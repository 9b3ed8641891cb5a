"""The ledgers in the state dir: `runs/<name>.json`, one per run, written atomically."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from rtool.core.state import StateDir
from rtool.runs.model import Ledger

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def ledger_file(run: str) -> str:
    """The state-dir path of a run's ledger (names that are not plain get a hashed file)."""
    if _SAFE.fullmatch(run):
        return f"runs/{run}.json"
    digest = hashlib.sha256(run.encode()).hexdigest()[:16]
    return f"runs/run-{digest}.json"


def load(state: StateDir, run: str) -> Ledger | None:
    data: Any = state.read_json(ledger_file(run))
    if not isinstance(data, dict) or data.get("run") != run:
        return None
    try:
        return Ledger.from_json(data)
    except (TypeError, ValueError):
        return None


def save(state: StateDir, ledger: Ledger) -> None:
    state.write_json(ledger_file(ledger.run), ledger.to_json())
