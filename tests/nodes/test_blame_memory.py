"""The NODE_FAIL lookup's memory of which sacct has no FailedNode field (Slurm 22.05) follows
the sacct that runs now: after an upgrade of that sacct (a new program: path, change time,
size), the binary's own field table says whether it has FailedNode, so every sweep asks sacct
once (on the real local Slurm); a sacct that is a wrapper script is asked and remembered."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtool.core.slurm import Slurm
from rtool.core.state import StateDir
from rtool.nodes.blame import MEMORY, Memory, refresh, sacct_knows_failed_node


def test_an_upgraded_sacct_is_asked_once_on_every_sweep(slurm_cluster, tmp_path):
    state = StateDir(tmp_path / "state")
    state.write_json(MEMORY, Memory(no_failed_node="/usr/bin/sacct:1:1").to_json())  # before
    counts = []
    for _ in range(3):
        s = Slurm(timeout=30)
        refresh(s, state, ["rt-nobody"], 3600)
        counts.append(sum(1 for c in s.calls if c[0] == "sacct"))
    # 22.05's binary has no FailedNode (known without asking), 24.11's has: once each sweep
    assert counts == [1, 1, 1], counts


def test_whether_sacct_has_failed_node_is_read_from_the_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    sacct = tmp_path / "sacct"
    assert sacct_knows_failed_node() is None  # no sacct on PATH
    for body, knows in (
        (b"\x7fELF...JobID\0Elapsed\0FailedNode\0", True),
        (b"\x7fELF...JobID\0Elapsed\0", False),
        (b'#!/bin/sh\nexec /usr/bin/sacct FailedNode "$@"\n', None),  # a wrapper: ask it
    ):
        sacct.write_bytes(body)
        sacct.chmod(0o755)
        assert sacct_knows_failed_node() is knows, body
