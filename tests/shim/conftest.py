"""Fixtures of the shim tests: guards closed after each test, the toy training script."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rtool.shim import Guard

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "examples" / "train_toy.py"


@pytest.fixture
def make_guard() -> Iterator[Callable[..., Guard]]:
    """Guard(...) with a fast poll and exit=False by default; closed after the test."""
    made: list[Guard] = []

    def make(save: Any = None, **kw: Any) -> Guard:
        kw.setdefault("poll_interval", 0.05)
        kw.setdefault("exit", False)
        g = Guard(save, **kw)
        made.append(g)
        return g

    yield make
    for g in made:
        g.close()


def toy_env(tmp: Path, **extra: str) -> dict[str, str]:
    """Environment of a toy run outside Slurm: no SLURM_* / RTOOL_* from the outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RTOOL_", "TOY_"))}
    env.update({"TOY_DIR": str(tmp), "PYTHONUNBUFFERED": "1", **extra})
    return env


def start_toy(tmp: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(TOY), *args],
        env=toy_env(tmp, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run_toy(tmp: Path, *args: str, timeout: float = 60, **env: str) -> tuple[int, str]:
    proc = start_toy(tmp, *args, **env)
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def steps_run(steps_log: Path) -> list[int]:
    """Steps in the toy's steps log, in the order they ran."""
    if not steps_log.exists():
        return []
    return [int(line.split()[0].split("=")[1]) for line in steps_log.read_text().splitlines()]
