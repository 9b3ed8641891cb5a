"""End-to-end fixtures: rtool as a real process, the toy training, a config per test."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from devtools.demo.observe import OutputInfo, StepLine, parse_output, parse_steps
from tests.servers.fixtures import slack_server, smtp_server

__all__ = ["slack_server", "smtp_server"]

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "examples" / "train_toy.py"
ENTRY = "import sys; from rtool.app.cli import app; app(sys.argv[1:])"

RtoolRun = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def rtool(tmp_path: Path) -> RtoolRun:
    """`rtool("submit", ..., cwd=DIR, env={...})`: rtool as its own process, with
    tmp_path/rtool.toml and no RTOOL_*/TOY_* variables from outside (Slurm jobs inherit `env`)."""

    def run(
        *args: str,
        cwd: Path | None = None,
        check: bool = True,
        timeout: float = 120,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-c", ENTRY, "--config", str(tmp_path / "rtool.toml"), *args]
        full = {k: v for k, v in os.environ.items() if not k.startswith(("RTOOL_", "TOY_"))}
        full.update(env or {})
        res = subprocess.run(
            argv,
            cwd=cwd or tmp_path,
            env=full,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if check and res.returncode != 0:
            out = res.stdout + res.stderr
            pytest.fail(f"rtool {' '.join(args)} exited {res.returncode}:\n{out}")
        return res

    return run


def steps_of(run_dir: Path) -> list[StepLine]:
    try:
        return parse_steps((run_dir / "steps.log").read_text())
    except FileNotFoundError:
        return []


def outputs_of(folder: Path, pattern: str) -> list[OutputInfo]:
    return [parse_output(p.read_text(errors="replace")) for p in sorted(folder.glob(pattern))]
