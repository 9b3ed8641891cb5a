"""`rtool watch ... --dry-run` (issue 30, point 7): every watcher can look without acting. It
says what it would do (hold, requeue, exclude, py-spy dump, signal) and send, and does none
of it: on the real cluster a crash loop's array is not held, no alert is queued or sent, no
state is written; the real run after it still acts. `--no-notify` keeps its meaning: no
message, actions still happen."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rtool.app.commands.watch_cmd import WRITTEN
from rtool.core.slurm import Slurm
from rtool.core.slurm.cmd import reads_only
from rtool.core.state import StateDir
from rtool.watchdogs.registry import configurable
from tests.conftest import CliResult
from tests.helpers import wait_for
from tests.runs.test_runs_live import CRASH, _submit

Cli = Callable[..., CliResult]


def test_every_watch_command_has_dry_run_and_no_notify(cli: Cli) -> None:
    for name in [*configurable(), *WRITTEN]:
        res = cli("watch", name, "--help")
        assert res.code == 0, name
        text = " ".join(re.sub("[│╭╮╰╯─]", " ", res.out).split())
        assert "--dry-run" in text and "write no state" in text, name
        assert "--no-notify" in text and "still happen" in text, name


def test_only_reading_commands_run_when_looking() -> None:
    assert reads_only(["squeue", "-h"]) and reads_only(["sacct", "-X"])
    assert reads_only(["scontrol", "show", "job", "1"]) and reads_only(["scrontab", "-l"])
    for argv in (["scontrol", "hold", "1"], ["scontrol", "update", "jobid=1"], ["scancel", "1"],
                 ["sbatch"], ["srun", "true"], ["scrontab", "-r"], ["scontrol"], []):  # fmt: skip
        assert not reads_only(argv), argv


def test_a_look_only_state_dir_writes_nothing(tmp_path: Path) -> None:
    fresh = StateDir(tmp_path / "new", look_only=True)
    assert not (tmp_path / "new").exists()
    fresh.write_json("watch/x.json", {"a": 1})
    assert fresh.read_json("watch/x.json", {}) == {"a": 1}  # this run sees its own writes
    with fresh.lock("l"):
        pass
    assert not (tmp_path / "new").exists()
    real = StateDir(tmp_path / "real")
    real.write_json("watch/x.json", {"a": 1})
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "real").rglob("*"))
    looking = StateDir(tmp_path / "real", look_only=True)
    looking.write_json("watch/x.json", {"a": 2})
    looking.write_json("watch/y.json", {"b": 1})
    with looking.lock("actions"):
        pass
    assert looking.read_json("watch/x.json", {}) == {"a": 2}
    assert real.read_json("watch/x.json", {}) == {"a": 1}
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "real").rglob("*")) == before


@pytest.mark.slurm
@pytest.mark.timeout(60)
def test_a_look_only_slurm_layer_reads_and_withholds_every_action(
    slurm: Slurm, job_name: str
) -> None:
    job = slurm.sbatch(
        [f"--job-name={job_name}", "--begin=now+600", "--time=1"], script="#!/bin/sh\ntrue\n"
    ).job_id
    looking = Slurm(timeout=30, look_only=True)
    looking.hold(job)
    looking.requeue(job)
    looking.set_excluded(job, ["n3"])
    looking.scancel([job], signal="USR1", full=True)
    assert [a[:2] for a in looking.withheld] == [
        ["scontrol", "hold"],
        ["scontrol", "requeue"],
        ["scontrol", "update"],
        ["scancel", "--signal=USR1"],
    ]
    (seen,) = looking.squeue(names=[job_name])  # reads run
    assert seen.state == "PENDING" and seen.reason == "BeginTime", seen
    record = slurm.show_job(job)[0]
    assert record.get("ExcNodeList") in (None, "(null)"), record


@pytest.mark.slurm
@pytest.mark.timeout(150)
def test_dry_run_on_a_crash_loop_holds_nothing_sends_nothing_and_writes_no_state(
    cli: Cli, slurm: Slurm, job_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    state, alerts = tmp_path / "state", tmp_path / "alerts.log"
    cfg = tmp_path / "watch.toml"  # not ./rtool.toml: `rtool submit` would read it too
    cfg.write_text(f'[state]\ndir = "{state}"\n[notify.log]\npath = "{alerts}"\n')
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    hb = tmp_path / "hb.json"
    job = _submit(cli, script, job_name, "0-9%1", hb)
    args = ("--config", str(cfg), "watch", "run", job_name, "--heartbeat", str(hb))
    args += ("--log", f"{job_name}-%A_%a.out", "--short", "2m", "--json")

    def looping() -> dict | None:  # type: ignore[type-arg]
        res = cli(*args, "--dry-run")
        assert res.code in (0, 1, 2, 3), res.err
        doc = json.loads(res.out)
        return doc if res.code == 2 and "CUDA" in doc["results"][0]["summary"] else None

    doc = wait_for(looping, 90, 1, "the crash loop, seen by a dry run")
    said = "\n".join(doc["dry_run"])  # type: ignore[index]
    assert f"would hold job {job}" in said and f"scontrol hold {job}" in said, said
    assert "would send alert CRITICAL run:" in said and "to log" in said, said
    assert said.endswith("nothing was changed, run or sent")
    assert "dry run: would hold" in doc["results"][0]["fields"]["action"]  # type: ignore[index]
    # nothing held: the array goes on crashing (its next tasks start and fail)
    pending = [j for j in slurm.squeue(names=[job_name]) if j.state == "PENDING"]
    assert pending and not any("Held" in (j.reason or "") for j in pending), pending
    assert not alerts.exists() and not state.exists()  # nothing sent, no state written
    # the real run after it acts (the dry run recorded no "done" mark)
    res = cli(*args)
    assert res.code == 2, res.out + res.err
    held = wait_for(
        lambda: [j for j in slurm.squeue(names=[job_name]) if "Held" in (j.reason or "")], 20, 0.5
    )
    assert held and alerts.exists() and "CUDA out of memory" in alerts.read_text()


def test_no_notify_still_acts_and_dry_run_reports_for_any_watcher(cli: Cli, tmp_path: Path) -> None:
    """A hung process (a log not written for 2 s) with a py-spy dump asked: `--dry-run` says
    it would dump and sends nothing; `--no-notify` dumps and sends nothing."""
    log = tmp_path / "train.log"
    log.write_text("step 1\n")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        import os
        import time

        old = time.time() - 10
        os.utime(log, (old, old))
        state = tmp_path / "state"
        cfg = tmp_path / "rtool.toml"
        cfg.write_text(f'[state]\ndir = "{state}"\n[notify.log]\npath = "{tmp_path / "a.log"}"\n')
        base = ("--config", str(cfg), "watch", "log", str(log), "--stale", "2s")
        res = cli(*base, "--dump-stacks", "--pid", str(sleeper.pid), "--dry-run")
        assert res.code == 2, res.out + res.err
        assert f"dry run: log:{log}: would attach a py-spy dump of pid {sleeper.pid}" in res.out
        assert "dry run: would send alert CRITICAL" in res.out
        assert not state.exists() and not (tmp_path / "a.log").exists()
        res = cli(*base, "--dump-stacks", "--pid", str(sleeper.pid), "--no-notify", "--json")
        fields = json.loads(res.out)["results"][0]["fields"]
        assert "stacks" in fields and "dry run" not in json.dumps(fields)  # it acted
        assert not (tmp_path / "a.log").exists()  # and sent nothing
    finally:
        sleeper.kill()
        sleeper.wait()
