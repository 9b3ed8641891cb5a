"""Real mounts for the disk and log watchdog tests: tmpfs with limits, a FUSE mount that hangs."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import wait_for

HUNG_FUSE = str(Path(__file__).with_name("hung_fuse.py"))


def _mounted(path: Path) -> bool:
    text = Path("/proc/self/mountinfo").read_text()
    return any(line.split()[4] == str(path) for line in text.splitlines())


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """tmpfs("name", size="10M", inodes=200) mounts a real tmpfs; all unmounted after."""
    mounted: list[Path] = []

    def mount(name: str, size: str = "10M", inodes: int = 200) -> Path:
        point = tmp_path / name
        point.mkdir()
        opts = f"size={size},nr_inodes={inodes}"
        subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(point)], check=True)
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.fixture
def hung_mount(tmp_path: Path) -> Iterator[Path]:
    """A real FUSE mount whose statfs never answers. Cleanup: kill the server (which fails the
    pending statfs), then lazily unmount."""
    point = tmp_path / "hung"
    point.mkdir()
    server = subprocess.Popen(
        [sys.executable, HUNG_FUSE, str(point)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: _mounted(point), timeout=20, interval=0.1, what="FUSE mount")
        yield point
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.pid, signal.SIGKILL)
        server.wait(timeout=10)
        subprocess.run(["fusermount", "-u", "-z", str(point)], check=False, capture_output=True)
        if _mounted(point):
            subprocess.run(["umount", "-l", str(point)], check=False)
        time.sleep(0.1)


def fill(directory: Path, nbytes: int) -> None:
    """Write `nbytes` of real data into `directory`."""
    with open(directory / "blob", "wb") as fh:
        fh.write(os.urandom(nbytes))
