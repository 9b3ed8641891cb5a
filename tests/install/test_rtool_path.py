"""The batch script runs rtool by the absolute path recorded at submit time: where a compute
node does not have it, the job fails before training and says why and how to fix it;
`[submit] rtool` names the path the nodes see."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from rtool.core.selfcmd import rtool_argv
from rtool.core.slurm import Slurm
from rtool.slurm_templates.config import SubmitConfig
from rtool.slurm_templates.jobs import render_job
from rtool.slurm_templates.training import TrainingJob
from tests.helpers import wait_for

MISSING = "/nonexistent/venvs/rtool/bin/rtool"


def _setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rtool_line: str = "") -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text('open("trained", "w").close()\nprint("trained")\n')
    (tmp_path / "rtool.toml").write_text(
        f'[state]\ndir = "{tmp_path / "state"}"\n'
        f'[nodes.preflight]\ndirs = ["{tmp_path / "scratch"}"]\nmin_free = "1KiB"\n'
        f"[submit]\n{rtool_line}"
    )


def _preflight_argv(script: str) -> list[str]:
    line = next(ln for ln in script.splitlines() if ln.endswith("|| _rtool_pf=$?"))
    return shlex.split(line.removesuffix("|| _rtool_pf=$?"))


def test_the_script_checks_the_rtool_that_submitted_it(tmp_path, monkeypatch, cli) -> None:
    _setup(tmp_path, monkeypatch)
    res = cli("submit", "train.py", "--time", "1:00:00", "--dry-run")
    assert res.code == 0, res.err
    own = rtool_argv()[0]
    assert Path(own).is_absolute() and _preflight_argv(res.out)[0] == own
    assert f"if [ ! -x {shlex.quote(own)} ]; then" in res.out


def test_submit_rtool_must_be_an_absolute_path(tmp_path, monkeypatch, cli) -> None:
    _setup(tmp_path, monkeypatch, 'rtool = "venv/bin/rtool"\n')
    res = cli("submit", "train.py", "--dry-run")
    assert res.code == 2 and "submit.rtool (line 7)" in res.err, res.err
    assert "the absolute path of the rtool command" in res.err


@pytest.mark.slurm
def test_a_node_without_rtool_fails_the_job_before_training(
    tmp_path, monkeypatch, cli, slurm: Slurm, job_name: str
) -> None:
    _setup(tmp_path, monkeypatch, f'rtool = "{MISSING}"\n')
    res = cli("submit", "train.py", "--job-name", job_name, "--time", "5:00", "--parsable")
    assert res.code == 0, res.err
    job_id = res.out.strip()

    def ended() -> str | None:
        states = [r.state for r in slurm.sacct(job_ids=[job_id]) if r.job_id == job_id]
        return next((s for s in states if s not in ("PENDING", "RUNNING")), None)

    assert wait_for(ended, timeout=120, what=f"job {job_id} to end") == "FAILED"
    log = (tmp_path / f"{job_name}-{job_id}.out").read_text()
    assert "rtool: cannot run rtool on n" in log and f"{MISSING} does not exist" in log, log
    assert '[submit] rtool = "/shared/venv/bin/rtool"' in log, log
    assert not (tmp_path / "trained").exists() and "trained" not in log.split(MISSING)[-1]


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=30), st.booleans())
def test_any_submit_rtool_is_refused_or_reaches_the_check_as_one_word(
    text: str, absolute: bool
) -> None:
    """A config value is refused (a config error naming the problem) or becomes one absolute
    path that the node check tests and names exactly, whatever its characters."""
    value = ("/nonexistent/" if absolute else "") + text
    try:
        path = SubmitConfig(rtool=value).rtool
    except ValidationError as exc:
        assert "rtool" in str(exc) and ("absolute path" in str(exc) or "control" in str(exc))
        return
    if not value:
        assert path is None
        return
    assert path is not None and path.startswith("/")
    assume(not os.path.exists(path))  # "~" alone is a home folder
    job = TrainingJob(job_name="j", script="/t.py", rtool=[path], preflight=[path, "preflight"])
    text_ = render_job(job)
    check = text_[text_.index("# ---- rtool runs itself") : text_.index("\nfi\n") + 4]
    res = subprocess.run(
        ["bash", "-c", f"{check}\necho not-stopped"], capture_output=True, text=True, timeout=30
    )
    assert res.returncode == 2 and res.stdout == "", res
    assert f" {path} does not exist on this node" in res.stderr, res.stderr


def test_rtool_runs_itself_by_an_absolute_command(tmp_path: Path, monkeypatch) -> None:
    """The console script beside the interpreter; else the one this process started as (a
    `pip install --user` script in ~/.local/bin); else `python -I -m rtool`."""
    import sys

    venv_bin, user_bin = tmp_path / "venv" / "bin", tmp_path / ".local" / "bin"
    for folder in (venv_bin, user_bin):
        folder.mkdir(parents=True)
        (folder / "rtool").write_text("#!/bin/sh\n")
        (folder / "rtool").chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(venv_bin / "python"))
    monkeypatch.setattr(sys, "argv", [str(user_bin / "rtool"), "cron", "tick"])
    assert rtool_argv() == [str(venv_bin / "rtool")]
    (venv_bin / "rtool").unlink()
    assert rtool_argv() == [str(user_bin / "rtool")]
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "rtool" / "__main__.py")])
    assert rtool_argv() == [str(venv_bin / "python"), "-I", "-m", "rtool"]
