"""A heartbeat path taken by something that is not a file (issue 36)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from rtool.shim import Guard


@pytest.mark.parametrize(
    ("where", "what"), [("", "is a folder"), ("/fifo", "is not a regular file")]
)
def test_a_heartbeat_path_taken_by_a_non_file_trains_on_without_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, where: str, what: str
) -> None:
    """A folder or FIFO left where the heartbeat goes (issue 36) never ends the training: one
    warning line, and the guard runs without a heartbeat (the FIFO is never opened)."""
    os.mkfifo(tmp_path / "fifo")
    with caplog.at_level(logging.WARNING, logger="rtool.shim"):
        g = Guard(None, heartbeat=f"{tmp_path}{where}", signals=(), exit=False, start=False)
    assert g.options.heartbeat is None
    assert not g.step(0).stopping
    lines = [r.getMessage() for r in caplog.records if "heartbeat" in r.getMessage()]
    assert lines == [
        f"rtool.shim: heartbeat: {tmp_path}{where} {what}; training on without a heartbeat"
    ]
