"""`rtool submit --dry-run`, usage errors (exit 2, one line), `rtool stop` and `rtool save`."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('training')\n")
    return tmp_path


def test_dry_run_prints_the_script_and_submits_nothing(cli: Cli, run_dir: Path) -> None:
    res = cli("submit", "train.py", "--array", "1-10%1", "--time", "20:00:00", "--dry-run")
    assert res.code == 0, res.err
    assert res.out.startswith("#!/bin/bash\n")
    assert "#SBATCH --array=1-10%1" in res.out
    assert "#SBATCH --signal=B:USR1@600" in res.out  # the default from the config schema
    assert "#SBATCH --output=%x-%A_%a.out" in res.out
    assert f"export RTOOL_KILL_SWITCH={run_dir}/kill-switch.train" in res.out  # the run's own
    assert f"export RTOOL_SAVE_SWITCH={run_dir}/save-switch.train" in res.out
    assert f"_rtool_train srun python {run_dir}/train.py" in res.out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--array", "1-10%0"], "array spec"),
        (["--array", "5-1"], "ends before"),
        (["--signal", "KILL@60"], "cannot forward SIGKILL to the training (it cannot be caught"),
        (["--signal", "B:CONT@60"], "cannot forward SIGCONT"),
        (["--signal", "USR1@"], "signal spec"),
        (["--time", "forever"], "time limit"),
        (["--time", "5", "--signal", "B:USR1@600"], "not shorter than the time limit"),
        (["--job-name", "a\nb"], "newline"),
        (["--exclude", "node[01"], "node list"),
        (["--partition", "gpu;id"], "partition"),
        (["--after", "12;id"], "job id"),
        (["--after", "1", "--after-name", "x"], "not both"),
        (["--nodes", "0"], "nodes must be at least 1"),
        (["--auto-requeue", "--array", "1-3"], "without --array"),
        (["--launcher", "torchrun 'unclosed"], "launcher"),
    ],
)
def test_bad_values_exit_2_with_one_line(
    cli: Cli, run_dir: Path, args: list[str], needle: str
) -> None:
    res = cli("submit", "train.py", *args)
    assert res.code == 2
    assert needle in res.err
    assert res.err.count("\n") == 1 and "Traceback" not in res.err


def test_missing_or_unknown_script(cli: Cli, run_dir: Path) -> None:
    res = cli("submit", "nope.py", "--dry-run")
    assert res.code == 2 and "cannot read nope.py" in res.err
    (run_dir / "notes.txt").write_text("hello\n")
    res = cli("submit", "notes.txt", "--dry-run")
    assert res.code == 2 and "neither a Python script" in res.err


def test_config_defaults_and_template_override(cli: Cli, run_dir: Path) -> None:
    cfg = run_dir / "rtool.toml"
    cfg.write_text(
        '[submit]\npartition = "gpu"\naccount = "proj"\ntime = "10h"\nsignal = "B:USR2@300"\n'
        'extra_lines = ["#SBATCH --qos=high", "module load cuda"]\n'
        '[switches]\nkill = "switches/kill"\n'
    )
    res = cli("--config", str(cfg), "submit", "train.py", "--dry-run")
    assert res.code == 0, res.err
    for line in (
        "#SBATCH --partition=gpu",
        "#SBATCH --account=proj",
        "#SBATCH --time=10:00:00",
        "#SBATCH --signal=B:USR2@300",
        "#SBATCH --qos=high",
        "\nmodule load cuda\n",
        "trap '_rtool_forward USR2' USR2",
        f"export RTOOL_KILL_SWITCH={run_dir}/switches/kill",
    ):
        assert line in res.out
    mine = run_dir / "mine.j2"
    mine.write_text('#!/bin/bash\n{% include "_sbatch_header.j2" %}\necho {{ job.script | q }}\n')
    res = cli("submit", "train.py", "--template", str(mine), "--dry-run")
    assert res.code == 0 and res.out.endswith(f"echo {run_dir}/train.py\n")
    cfg.write_text('[submit]\narray = "1-x"\n')
    res = cli("--config", str(cfg), "submit", "train.py", "--dry-run")
    assert res.code == 2 and "submit.array" in res.err


def test_submit_refuses_while_the_kill_switch_is_set(cli: Cli, run_dir: Path) -> None:
    (run_dir / "kill-switch.train").touch()
    res = cli("submit", "train.py")
    assert res.code == 1 and "kill switch" in res.err and "remove it" in res.err


def test_stop_and_save_touch_group_writable_switches(cli: Cli, run_dir: Path) -> None:
    old = os.umask(0o022)
    cfg = run_dir / "shared.toml"
    cfg.write_text('[switches]\ngroup_writable = true\nsave = "shared/save-all"\n')
    os.chmod(run_dir, 0o2775)
    try:
        res = cli("--config", str(cfg), "stop", "--kill-switch", "shared/runs/kill")
        assert res.code == 0, res.err
        kill = run_dir / "shared/runs/kill"
        assert kill.exists() and str(kill) in res.out
        assert stat.S_IMODE(kill.stat().st_mode) == 0o664
        assert stat.S_IMODE((run_dir / "shared").stat().st_mode) & 0o070 == 0o070
        # a [switches] path without {run} is one switch for every run: no name needed
        assert cli("--config", str(cfg), "save").code == 0
        assert (run_dir / "shared/save-all").exists()
    finally:
        os.umask(old)
    res = cli("stop", "--cancel-pending")
    assert res.code == 2 and "--cancel-pending needs --run" in res.err


def _signal_line(out: str) -> str:
    return next(ln for ln in out.splitlines() if ln.startswith("#SBATCH --signal="))


@pytest.mark.parametrize(
    ("time", "signal"),
    [
        ("0:05:00", "B:USR1@75"),  # a quarter of the limit
        ("3", "B:USR1@60"),  # at least the minute Slurm may be late
        ("1", "B:USR1@30"),  # a one-minute limit: half of it
        ("20:00", "B:USR1@300"),  # the default lead would take half the limit
        ("30:00", "B:USR1@600"),  # the default fits
    ],
)
def test_the_default_signal_adapts_to_a_short_time_limit_and_says_so(
    cli: Cli, run_dir: Path, time: str, signal: str
) -> None:
    res = cli("submit", "train.py", "--time", time, "--dry-run")
    assert res.code == 0, res.err
    assert _signal_line(res.out) == f"#SBATCH --signal={signal}"
    if signal.endswith("@600"):
        assert "warning signal" not in res.err
    else:
        assert f"the warning signal comes {signal.split('@')[1]} s before it ({signal})" in res.err


def test_a_lead_the_user_chose_is_kept_or_refused_never_changed(
    cli: Cli, run_dir: Path, tmp_path: Path
) -> None:
    res = cli("submit", "train.py", "--time", "0:05:00", "--signal", "B:USR1@600", "--dry-run")
    assert res.code == 2 and "not shorter than the time limit" in res.err
    assert "--signal B:USR1@75" in res.err  # what would work
    res = cli("submit", "train.py", "--time", "0:05:00", "--signal", "B:USR1@200", "--dry-run")
    assert res.code == 0 and _signal_line(res.out) == "#SBATCH --signal=B:USR1@200"
    cfg = tmp_path / "rtool.toml"
    cfg.write_text('[submit]\nsignal = "B:USR1@600"\n')
    res = cli("--config", str(cfg), "submit", "train.py", "--time", "0:05:00", "--dry-run")
    assert res.code == 2 and "not shorter than the time limit" in res.err
    job = run_dir / "job.slurm"
    job.write_text("#!/bin/bash\n#SBATCH --time=0:05:00\n#SBATCH --signal=B:USR1@240\necho hi\n")
    res = cli("submit", "job.slurm", "--dry-run")
    assert res.code == 0 and _signal_line(res.out) == "#SBATCH --signal=B:USR1@240", res.err


def test_the_defaults_are_the_tuned_set_up_unless_turned_off(cli: Cli, run_dir: Path) -> None:
    res = cli("submit", "train.py", "--dry-run")
    assert res.code == 0, res.err
    assert "export RTOOL_HANG_AFTER=auto" in res.out  # in-process hang detection
    assert "export RTOOL_EXIT_BEFORE_END=auto" in res.out  # the learned pre-deadline stop
    assert "export RTOOL_RESTARTS_IN_PLACE=2" in res.out
    off = ("--hang-after", "off", "--exit-before-end", "off", "--restarts-in-place", "0")
    res = cli("submit", "train.py", *off, "--dry-run")
    assert res.code == 0, res.err
    assert "export RTOOL_HANG_AFTER=off" in res.out and "RTOOL_EXIT_BEFORE_END=off" in res.out
    assert "export RTOOL_RESTARTS_IN_PLACE" not in res.out


def test_spare_nodes_allocate_more_and_train_on_the_asked_nodes(cli: Cli, run_dir: Path) -> None:
    res = cli("submit", "train.py", "--nodes", "2", "--spare-nodes", "1", "--dry-run")
    assert res.code == 0, res.err
    assert "#SBATCH --nodes=3\n" in res.out and "#SBATCH --no-kill\n" in res.out
    assert "export RTOOL_SPARE_NODES=1 RTOOL_LAUNCH_SIZE=2" in res.out
    assert "export SLURM_NNODES=$RTOOL_LAUNCH_SIZE" in res.out
    plain = cli("submit", "train.py", "--nodes", "2", "--dry-run")
    assert "#SBATCH --nodes=2\n" in plain.out and "--no-kill" not in plain.out
    assert "RTOOL_SPARE_NODES" not in plain.out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--restarts-in-place", "0"], "--spare-nodes needs restarts in place"),
        (["--restarts-in-place", "1", "--spare-nodes", "101"], "spare-nodes must be between"),
    ],
)
def test_spare_nodes_refused_where_they_cannot_work(
    cli: Cli, run_dir: Path, args: list[str], needle: str
) -> None:
    res = cli("submit", "train.py", "--spare-nodes", "1", *args)
    assert res.code == 2 and needle in res.err, res.err
    assert res.err.count("\n") == 1 and "Traceback" not in res.err
    (run_dir / "job.slurm").write_text("#!/bin/bash\n#SBATCH --nodes=2\nsrun hostname\n")
    res = cli("submit", "job.slurm", "--spare-nodes", "1", "--dry-run")
    assert res.code == 2 and "--spare-nodes needs a Python script" in res.err, res.err
