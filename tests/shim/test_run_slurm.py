"""The shim's Slurm queries (rtool/shim/slurm.py run_slurm): a query that Slurm's own signal to
every process of the job killed is asked again, so a preemption is still named as one (seen on
the local cluster with GraceTime 0: `scontrol show job N failed (-15)`, then no
"Slurm is preempting this job")."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rtool.shim.slurm import run_slurm


def _query(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "scontrol"
    script.write_text(f"#!/bin/bash\n{body}\n")
    script.chmod(0o755)
    return [str(script), "show", "job", "7"]


def test_a_query_killed_by_a_signal_is_asked_once_more(tmp_path: Path) -> None:
    mark = tmp_path / "asked"
    argv = _query(tmp_path, f'[ -e {mark} ] || {{ touch {mark}; kill -TERM $$; }}\necho "JobId=7"')
    assert run_slurm(argv) == "JobId=7\n"


def test_a_query_that_fails_or_keeps_dying_is_none_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    assert run_slurm(_query(tmp_path, "kill -TERM $$")) is None
    assert "failed (-15)" in caplog.text
    assert run_slurm(_query(tmp_path, "echo 'Invalid job id' >&2; exit 1")) is None
    assert "failed (1): Invalid job id" in caplog.text
