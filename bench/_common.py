"""Shared by the bench scripts: a Slurm to measure against, and the median of repeated runs."""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from devtools.localslurm import control


@contextlib.contextmanager
def slurm_conf() -> Iterator[None]:
    """Use $SLURM_CONF when set, else start a local Slurm in a temp folder (stopped after)."""
    if os.environ.get("SLURM_CONF"):
        yield
        return
    d = Path(tempfile.mkdtemp(prefix="rtool-bench-slurm-"))
    cluster = control.up(d)
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        yield
    finally:
        control.down(d)
        os.environ.pop("SLURM_CONF", None)


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of `repeat` calls of `fn`, in seconds."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)
