"""Small helpers for tests (import as `from tests.helpers import wait_for`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.localslurm import control


def wait_for(
    predicate: Callable[[], object],
    timeout: float = 60,
    interval: float = 0.5,
    what: str = "condition",
) -> object:
    """Poll `predicate` until it returns a truthy value; fail the test after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)


def mounted(path: Path) -> bool:
    """Whether `path` is a mount point of this process's mount namespace."""
    text = Path("/proc/self/mountinfo").read_text()
    return any(line.split()[4] == str(path) for line in text.splitlines())


@contextlib.contextmanager
def fuse_server(script: str, point: Path) -> Iterator[Path]:
    """Run the FUSE server `script` on the new folder `point` until its mount appears.
    Cleanup: kill the server (which fails the pending requests), then lazily unmount."""
    point.mkdir()
    server = subprocess.Popen(
        [sys.executable, script, str(point)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: mounted(point), timeout=20, interval=0.1, what="FUSE mount")
        yield point
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.pid, signal.SIGKILL)
        server.wait(timeout=10)
        subprocess.run(["fusermount", "-u", "-z", str(point)], check=False, capture_output=True)
        if mounted(point):
            subprocess.run(["umount", "-l", str(point)], check=False)
        time.sleep(0.1)


@contextlib.contextmanager
def private_cluster(prefix: str, what: str, **shape: Any) -> Iterator[control.Cluster]:
    """A local cluster (`control.up(**shape)`) in a new folder under /tmp, for a fixture: the
    test fails (never skips) when it cannot start; afterwards it is stopped and its folder
    removed (MariaDB's data alone is about 180 MB a cluster)."""
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        try:
            cluster = control.up(directory, **shape)
        except control.LocalSlurmError as exc:
            pytest.fail(f"{what} could not start: {exc}", pytrace=False)
        yield cluster
    finally:
        control.down(directory)
        shutil.rmtree(directory, ignore_errors=True)
