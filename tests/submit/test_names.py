"""A run's names and switches: the run and job names agree, each run has its own kill and save
switch, `rtool stop` / `rtool save` find a run by either name and refuse an unknown one, the
warning signal always reaches the batch shell (B:)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtool.core.state import StateDir
from rtool.runs import names
from tests.conftest import CliResult

Cli = Callable[..., CliResult]


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('training')\n")
    return tmp_path


def _line(out: str, start: str) -> str:
    return next(ln for ln in out.splitlines() if ln.startswith(start))


def record(run: str, job_name: str, where: Path, job_id: str = "12") -> names.Submission:
    """What `rtool submit` records (the submission itself is tested on Slurm in test_slurm)."""
    sub = names.Submission(
        run=run,
        job_name=job_name,
        job_id=job_id,
        workdir=str(where),
        kill_switch=str(where / f"kill-switch.{run}"),
        save_switch=str(where / f"save-switch.{run}"),
        heartbeat=str(where / "hb.json"),
        submitted=time.time(),
    )
    names.save(StateDir(), sub)
    return sub


def test_the_run_names_the_jobs_and_the_jobs_name_the_run(cli: Cli, run_dir: Path) -> None:
    res = cli("submit", "train.py", "--run", "llama-7b", "--dry-run")
    assert res.code == 0, res.err
    assert _line(res.out, "#SBATCH --job-name=") == "#SBATCH --job-name=llama-7b"
    assert "export RTOOL_RUN=llama-7b" in res.out
    assert f"export RTOOL_KILL_SWITCH={run_dir}/kill-switch.llama-7b" in res.out
    # both given: both kept; the switches name the run
    res = cli("submit", "train.py", "--run", "llama-7b", "--job-name", "pre", "--dry-run")
    assert _line(res.out, "#SBATCH --job-name=") == "#SBATCH --job-name=pre"
    assert f"export RTOOL_SAVE_SWITCH={run_dir}/save-switch.llama-7b" in res.out
    # no --run: the job name is the run, and names the switches
    res = cli("submit", "train.py", "--job-name", "x';rm-rf~#", "--dry-run")
    kill = _line(res.out, "export RTOOL_KILL_SWITCH=")
    assert kill.startswith(f"export RTOOL_KILL_SWITCH={run_dir}/kill-switch.x__rm-rf_") and (
        "'" not in kill.split("=", 1)[1] and " " not in kill.split("=", 1)[1]
    ), kill


def test_a_job_name_with_spaces_is_refused_at_submit_with_the_reason(
    cli: Cli, run_dir: Path
) -> None:
    """Issue 35.14: accepted before, then `rtool history R` printed only pydantic's URL line."""
    for args in (["--run", "R", "--job-name", "a name with spaces"], ["--job-name", "two words"]):
        res = cli("submit", "train.py", *args, "--dry-run")
        assert res.code == 2, res.out
        assert (
            "rtool finds a run's attempts by their job name, which may not contain spaces or "
            in (res.err)
        )
        assert res.err.count("\n") == 1 and "#SBATCH" not in res.out
    (run_dir / "my train.py").write_text("print('training')\n")
    res = cli("submit", "my train.py", "--dry-run")  # the job name from the script's name
    assert res.code == 2 and "job name 'my train'" in res.err, res.err
    res = cli("submit", "my train.py", "--run", "ok-name", "--dry-run")
    assert res.code == 0, res.err


def test_history_of_a_run_recorded_with_a_bad_job_name_says_why(cli: Cli, run_dir: Path) -> None:
    """A submission recorded by an older rtool: the reason, never a library's URL line."""
    record("R", "a name with spaces", run_dir)
    res = cli("history", "R", "--stored")
    assert res.code == 2
    assert res.err == (
        "rtool: run 'R': job_name 'a name with spaces': no spaces or commas, not starting "
        "with '-'\n"
    ), res.err
    assert "pydantic" not in res.err and "http" not in res.err


def test_a_configured_switch_path_names_the_run_with_a_placeholder(cli: Cli, run_dir: Path) -> None:
    cfg = run_dir / "rtool.toml"
    cfg.write_text('[switches]\nkill = "switches/{run}/kill"\nsave = "~/save-{run}"\n')
    res = cli("--config", str(cfg), "submit", "train.py", "--run", "a", "--dry-run")
    assert f"export RTOOL_KILL_SWITCH={run_dir}/switches/a/kill" in res.out
    assert f"export RTOOL_SAVE_SWITCH={Path('~/save-a').expanduser()}" in res.out
    for option in ("--run", "--job-name"):  # a name cannot climb out of the folder
        res = cli("--config", str(cfg), "submit", "train.py", option, "..", "--dry-run")
        assert res.code == 0 and f"export RTOOL_KILL_SWITCH={run_dir}/switches/run-" in res.out


def test_stop_and_save_find_the_run_by_either_name(cli: Cli, run_dir: Path) -> None:
    sub = record("llama-7b", "pretrain", run_dir)
    res = cli("stop", "--run", "llama-7b")
    assert res.code == 0 and Path(sub.kill_switch).exists() and sub.kill_switch in res.out
    Path(sub.kill_switch).unlink()
    res = cli("stop", "--job-name", "pretrain")
    assert res.code == 0 and Path(sub.kill_switch).exists()
    res = cli("save", "--job-name", "llama-7b")
    assert res.code == 0 and Path(sub.save_switch).exists()
    # one run's switch is not another's
    other = record("other", "other", run_dir, "13")
    assert not Path(other.kill_switch).exists() and not Path(other.save_switch).exists()


def test_stop_or_save_of_an_unknown_run_lists_the_known_ones_and_creates_nothing(
    cli: Cli, run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    res = cli("stop", "--job-name", "some-typo")
    assert res.code == 1 and "no run was submitted with rtool submit" in res.err
    record("llama-7b", "train", run_dir)
    for args in (("stop", "--job-name", "some-typo"), ("save", "--run", "some-typo")):
        res = cli(*args)
        assert res.code == 1 and res.err.count("\n") == 1, res.err
        assert "no run or job named 'some-typo'" in res.err
        assert f"known runs: llama-7b (jobs named train, job 12, from {run_dir})" in res.err
    res = cli("stop")  # each run has its own switch: which one?
    assert res.code == 2 and "name the run: rtool stop --run NAME" in res.err
    assert "known runs: llama-7b" in res.err
    res = cli("stop", "--job-name", "some-typo", "--cancel-pending")
    assert res.code == 1
    assert sorted(p.name for p in elsewhere.iterdir()) == []
    assert sorted(p.name for p in run_dir.iterdir()) == ["elsewhere", "train.py", "xdg-state"]


@settings(max_examples=40, deadline=None)
@given(name=st.text(min_size=1, max_size=300))
def test_any_run_name_gives_one_plain_file_name(name: str) -> None:
    part = names.file_part(name)
    assert part and "/" not in part and part not in (".", "..") and "\x00" not in part
    assert len(part) <= 100
    assert names.file_part(name) == part  # stable across calls
    if name != part:
        assert part != names.file_part(name + "x")


@pytest.mark.parametrize("given_signal", ["USR1@600", "B:USR1@600"])
def test_a_signal_without_b_is_sent_to_the_batch_shell_and_the_dry_run_says_so(
    cli: Cli, run_dir: Path, given_signal: str
) -> None:
    res = cli("submit", "train.py", "--time", "2:00:00", "--signal", given_signal, "--dry-run")
    assert res.code == 0, res.err
    assert _line(res.out, "#SBATCH --signal=") == "#SBATCH --signal=B:USR1@600"
    assert "trap '_rtool_forward USR1' USR1" in res.out
    said = "--signal USR1@600 is sent as B:USR1@600: rtool forwards the signal from the batch"
    assert (said in res.err) == (given_signal == "USR1@600"), res.err
    job = run_dir / "job.slurm"  # the script's own line and the config are read the same way
    job.write_text("#!/bin/bash\n#SBATCH --signal=USR2@300\necho hi\n")
    res = cli("submit", "job.slurm", "--dry-run")
    assert _line(res.out, "#SBATCH --signal=") == "#SBATCH --signal=B:USR2@300"
    assert "is sent as B:USR2@300" in res.err
