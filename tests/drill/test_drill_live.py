"""The preemption drill on the real local Slurm, with the toy training (examples/train_toy.py):
a drill that passes (a throw-away array and a running auto-requeue job: saved, exited,
requeued, resumed at the saved step + 1, checked against the toy's own steps log), one that
catches a save slower than the lead, and one that catches a --signal that never reaches the
training."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devtools.demo.observe import parse_steps
from rtool.core.slurm import Slurm

TOY = Path(__file__).resolve().parents[2] / "examples" / "train_toy.py"
STEP = re.compile(r"saved step (\d+)")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config with its own state dir; the test runs in tmp_path (job outputs land there)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rtool.toml").write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')
    return tmp_path


def toy(run: Path, *extra: str) -> tuple[str, ...]:
    args = f"--steps 100000 --step-seconds 0.2 --dir {run} {' '.join(extra)}"
    return ("--python", sys.executable, "--args", args)


def drill(cli: Callable[..., Any], here: Path, *args: str) -> Any:
    return cli("--config", str(here / "rtool.toml"), "drill", *args)


def steps(line: str) -> dict[str, str]:
    """`  resume   OK  text` -> {"resume": "OK  text"}."""
    return {ln.split()[0]: ln.split(None, 1)[1] for ln in line.splitlines()[1:] if ln.strip()}


@pytest.mark.slurm
@pytest.mark.timeout(240)
def test_a_throwaway_array_drill_passes_the_toy_resumed_at_the_saved_step_plus_one_then_submits(
    here: Path, cli: Callable[..., Any], slurm: Slurm, job_name: str
) -> None:
    r = drill(
        cli, here, "--submit", str(TOY), "--job-name", job_name, "--array", "0-9%1",
        "--time", "20:00", "--signal", "B:USR1@60", *toy(Path("run")), "--json", "--and-submit",
    )  # fmt: skip
    report = json.loads(r.out)
    assert r.code == 0 and report["status"] == "OK", r.out + r.err
    assert [s["status"] for s in report["steps"]] == ["OK"] * 7, r.out
    [folder] = (here / "rtool-drill").iterdir()
    saved = int(STEP.findall((folder / f"{job_name}-drill-{report['job_id']}.out").read_text())[-1])
    lines = parse_steps((folder / "run" / "steps.log").read_text())  # relative: in the folder
    first, second = [[s.step for s in lines if s.task == t] for t in ("0", "1")]
    assert first[-1] == saved and second[0] == saved + 1  # the toy's own record agrees
    resume = next(s for s in report["steps"] if s["step"] == "resume")
    assert f"started at step {saved + 1}" in resume["text"]
    assert not slurm.squeue(names=[f"{job_name}-drill"], states="PENDING,RUNNING")  # cancelled
    assert "the drill passed: submitted job" in r.err  # --and-submit: then the real one
    assert slurm.squeue(names=[job_name], states="PENDING,RUNNING")


@pytest.mark.slurm
@pytest.mark.timeout(240)
def test_a_drill_of_a_running_auto_requeue_job_checks_its_requeue_and_resume(
    here: Path, cli: Callable[..., Any], slurm: Slurm, job_name: str
) -> None:
    # found by its run name, as rtool history finds it: its jobs have another name
    run, name = here / "run", f"llm-{job_name}"
    sub = cli(
        "--config", str(here / "rtool.toml"), "submit", str(TOY), "--run", name,
        "--job-name", job_name, "--auto-requeue", "--time", "20:00", "--signal", "B:USR1@30",
        "--heartbeat", str(run / "hb.json"), *toy(run), "--parsable",
    )  # fmt: skip
    assert sub.code == 0, sub.err
    r = drill(cli, here, name)
    assert r.code == 0, r.out + r.err
    assert r.out.startswith(f"DRILL OK - run {name}: the stop path works"), r.out
    s = steps(r.out)
    assert s["exit"].startswith("OK") and "exit code 85 (requeue me)" in s["exit"]
    assert s["requeue"].startswith("OK") and "back in the queue (restart 1)" in s["requeue"]
    assert "(restart 1) started at step" in s["resume"]
    records = slurm.show_job(sub.out.strip())
    assert records and records[0]["Restarts"] == "1" and records[0]["JobState"] == "RUNNING"


@pytest.mark.slurm
@pytest.mark.timeout(240)
def test_a_drill_catches_a_save_slower_than_the_lead(
    here: Path, cli: Callable[..., Any], job_name: str
) -> None:
    r = drill(
        cli, here, "--submit", str(TOY), "--job-name", job_name, "--array", "0-3%1",
        "--time", "20:00", "--signal", "B:USR1@8", *toy(Path("run"), "--save-seconds", "20"),
        "--no-requeue", "--and-submit",
    )  # fmt: skip
    assert r.code == 2, r.out + r.err
    assert f"not submitting {job_name}: the drill is CRITICAL" in r.err  # --and-submit
    head, s = r.out.splitlines()[0], steps(r.out)
    assert head.startswith(f"DRILL CRITICAL - run {job_name}-drill: lead: exited ")
    assert "of the 8s lead" in head and "raise the lead: --signal B:USR1@60" in head
    assert s["save"].startswith("OK") and re.search(r"in 2\d\.\ds", s["save"]), s["save"]
    assert s["lead"].startswith("CRITICAL") and s["exit"].startswith("OK")
    assert "not waited for (--no-requeue)" in s["resume"]


@pytest.mark.slurm
@pytest.mark.timeout(240)
def test_a_drill_catches_a_signal_that_never_reaches_the_training(
    here: Path, cli: Callable[..., Any], slurm: Slurm, job_name: str
) -> None:
    # A hand-written batch script sent by plain sbatch (rtool submit would send it as B:): its
    # USR1 goes to the job steps, and the training runs in the batch shell, not in a step.
    run = here / "run"
    script = (
        "#!/bin/bash\n#SBATCH --signal=USR1@10\n#SBATCH --time=20:00\n"
        f"#SBATCH --job-name={job_name}\n"
        f"export RTOOL_HEARTBEAT={run}/hb.json RTOOL_AUTO_REQUEUE=1\n"
        f"{sys.executable} {TOY} --steps 100000 --step-seconds 0.2 --dir {run}\n"
    )
    sub = slurm.sbatch([f"--output={here}/mine.out"], script=script, cwd=str(here))
    r = drill(cli, here, job_name, "--no-requeue")
    assert r.code == 2, r.out + r.err
    s = steps(r.out)
    assert s["signal"].startswith("OK") and "to the job steps" in s["signal"]
    assert s["reached"].startswith("CRITICAL") and "never reached the training" in s["reached"]
    assert "use --signal=B:USR1@10" in s["reached"]
    assert all(s[k].startswith("-") for k in ("save", "lead", "exit", "requeue", "resume"))
    [job] = slurm.squeue(job_ids=[sub.job_id])
    assert job.state == "RUNNING"  # the drill left the run alone: it still trains
