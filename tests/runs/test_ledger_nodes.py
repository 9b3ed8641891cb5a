"""A run ledger stores each attempt's nodes in Slurm's compressed form (format 2), reads the
lists format 1 wrote, and `rtool history --json` still lists the names."""

from __future__ import annotations

import json
from pathlib import Path

from rtool.core.state import StateDir
from rtool.runs import store
from rtool.runs.model import LEDGER_FORMAT, Attempt, Ledger

NODES = (*(f"gpu{i:04d}" for i in range(1, 1001)), "login01")


def _ledger(attempts: int) -> Ledger:
    return Ledger(
        run="big",
        attempts=[
            Attempt(run="big", number=i, job_id=f"41_{i}", state="TIMEOUT", nodes=NODES)
            for i in range(1, attempts + 1)
        ],
    )


def test_stored_compressed_read_back_and_listed_in_json(tmp_path: Path, cli) -> None:
    state = StateDir(tmp_path / "xdg-state" / "rtool")
    store.save(state, _ledger(50))
    raw = (state.path / store.ledger_file("big")).read_text()
    stored = json.loads(raw)
    assert stored["format"] == LEDGER_FORMAT == 2
    assert stored["attempts"][0]["nodes"] == "gpu[0001-1000],login01"
    assert len(raw) < 50 * 1000  # 50 attempts of 1001 nodes: a list each would be ~600 kB
    led = store.load(state, "big")
    assert led is not None and led.attempts[-1].nodes == NODES
    shown = json.loads(cli("history", "big", "--stored", "--json").out)
    assert shown["ledger"]["attempts"][0]["nodes"] == list(NODES)
    table = cli("history", "big", "--stored").out
    assert "gpu[0001-1000],login01" in table


def test_a_format_1_ledger_with_node_lists_is_read(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "s")
    old = _ledger(2).to_json()  # lists, as format 1 stored them
    old["format"] = 1
    state.write_json(store.ledger_file("big"), old)
    led = store.load(state, "big")
    assert led is not None and [a.nodes for a in led.attempts] == [NODES, NODES]
