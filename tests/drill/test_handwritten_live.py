"""The drill on the batch scripts users write by hand (plain sbatch, the toy training with the
shim), on the real local Slurm: the drill is OK exactly when the stop path works, and then the
toy's own steps log shows the next array task resumed at the saved step + 1; every broken one is
CRITICAL with what to change (B:, a trap, exec, rtool submit)."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from devtools.demo.observe import parse_steps
from rtool.core.slurm import Slurm

TOY = Path(__file__).resolve().parents[2] / "examples" / "train_toy.py"
TRAIN = f"{sys.executable} {TOY} --steps 100000 --step-seconds 0.2 --dir run"
#: A batch script that passes USR1 on to the process it started, and exits with its code.
TRAP = "{cmd} & pid=$!\ntrap 'kill -USR1 $pid' USR1\nwait $pid; wait $pid\n"

CASES = {
    # name: (--signal, the script's body, OK?, words of the broken step's text and fix)
    "srun-no-trap-B": ("B:USR1@30", f"srun {TRAIN}\n", False, ("drop B:", "srun python")),
    "srun-steps-signal": ("USR1@30", f"srun {TRAIN}\n", True, ()),
    "exec-B": ("B:USR1@30", f"exec {TRAIN}\n", True, ()),
    "no-exec-B": ("B:USR1@30", f"{TRAIN}\n", False, ("exec the training", "trap")),
    "wrapper-dies": (
        "B:USR1@30",
        TRAP.format(cmd=f'bash -c "{TRAIN}; true"'),
        False,
        ("died of SIGUSR1", "exec the training from it"),
    ),
    "wrapper-execs": ("B:USR1@30", TRAP.format(cmd=f'bash -c "exec {TRAIN}"'), True, ()),
}


@pytest.fixture(autouse=True)
def _no_toy_left(tmp_path: Path) -> Iterator[None]:
    """A script that does not exec the training leaves the toy behind when its shell dies:
    the local cluster's proctrack/linuxproc loses a child reparented to init. End it."""
    yield
    for proc in psutil.process_iter(["cwd", "cmdline"]):
        toy = str(TOY) in (proc.info.get("cmdline") or [])
        if toy and str(proc.info.get("cwd") or "").startswith(str(tmp_path)):
            with contextlib.suppress(psutil.Error):
                proc.kill()


def steps(out: str) -> dict[str, str]:
    return {ln.split()[0]: ln.split(None, 1)[1] for ln in out.splitlines()[1:] if ln.strip()}


@pytest.mark.slurm
@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", list(CASES))
def test_a_hand_written_script_is_ok_exactly_when_the_toy_resumed_at_the_saved_step_plus_one(
    case: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cli: Callable[..., Any],
    slurm: Slurm,
    job_name: str,
) -> None:
    signal, body, ok, words = CASES[case]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rtool.toml").write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')
    script = (
        f"#!/bin/bash\n#SBATCH --signal={signal}\n#SBATCH --time=20:00\n"
        f"#SBATCH --job-name={job_name}\n#SBATCH --array=0-1%1\n"
        f"export RTOOL_HEARTBEAT={tmp_path}/run/hb.json\n{body}"
    )
    slurm.sbatch([f"--output={tmp_path}/%x-%A_%a.out"], script=script, cwd=str(tmp_path))
    r = cli("--config", str(tmp_path / "rtool.toml"), "drill", job_name, "--json")
    report = json.loads(r.out)
    by_step = {s["step"]: s for s in report["steps"]}
    log = parse_steps((tmp_path / "run" / "steps.log").read_text())
    first, second = [[s.step for s in log if s.task == t] for t in ("0", "1")]
    if ok:
        assert r.code == 0 and report["status"] == "OK", r.out + r.err
        saved = int(by_step["save"]["text"].split()[2])
        assert first[-1] == saved and second and second[0] == saved + 1  # the toy's own log
        assert f"started at step {saved + 1}" in by_step["resume"]["text"]
        return
    assert r.code == 2 and report["status"] == "CRITICAL", r.out + r.err
    broken = next(s for s in report["steps"] if s["status"] not in ("OK", None))
    assert broken["step"] == "reached", r.out
    said = broken["text"] + " -> " + (broken["fix"] or "")
    assert all(w in said for w in words), said
    assert report["summary"].startswith(f"run {job_name}: reached: ")
    if case == "srun-no-trap-B":  # saved only on the TERM that followed: still CRITICAL
        assert "the batch shell died of SIGUSR1 (Slurm: FAILED 0:10)" in by_step["exit"]["text"]
        assert "not on the SIGUSR1 the drill sent" in said or "died of SIGUSR1" in said
