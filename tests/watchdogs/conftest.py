"""A FUSE mount that hangs, for the disk watchdog tests (`tmpfs` is in tests/conftest.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import fuse_server

HUNG_FUSE = str(Path(__file__).with_name("hung_fuse.py"))


@pytest.fixture
def hung_mount(tmp_path: Path) -> Iterator[Path]:
    """A real FUSE mount whose statfs never answers. Cleanup: kill the server (which fails the
    pending statfs), then lazily unmount."""
    with fuse_server(HUNG_FUSE, tmp_path / "hung") as point:
        yield point


def fill(directory: Path, nbytes: int) -> None:
    """Write `nbytes` of real data into `directory`."""
    with open(directory / "blob", "wb") as fh:
        fh.write(os.urandom(nbytes))
