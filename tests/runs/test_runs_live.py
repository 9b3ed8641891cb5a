"""The run view on the real local Slurm (3 nodes with accounting): a crash loop found after two
attempts with its CUDA OOM signature and the rest of the array held; an attempt whose node
failed shows NODE_FAIL and the node; in degraded mode (--no-accounting: the batch script's
records, heartbeats and squeue) a stalled run, then exhausted without finished(); a finished
run reads as finished for the job and run watchdogs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from devtools.localslurm import control
from rtool.core.slurm import Slurm
from tests.conftest import CliResult
from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "examples" / "train_toy.py"
CRASH = """\
import sys, time
print("loading model", flush=True)
time.sleep(3)
sys.stderr.write(
    "Traceback (most recent call last):\\n"
    '  File "train.py", line 40, in <module>\\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\\n"
)
sys.exit(1)
"""

Cli = Callable[..., CliResult]


def _watch(cli: Cli, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    res = cli("watch", "run", *args, "--no-notify", "--json")
    assert res.code in (0, 1, 2, 3), res.err
    doc = json.loads(res.out)
    return res.code, doc["results"][0]


def _submit(cli: Cli, script: Path, name: str, array: str, hb: Path, *more: str) -> str:
    res = cli(
        "submit",
        str(script),
        "--job-name",
        name,
        "--array",
        array,
        "--heartbeat",
        str(hb),
        "--python",
        sys.executable,
        "--time",
        "0:20:00",
        "--parsable",
        *more,
    )
    assert res.code == 0, res.err
    return res.out.strip().splitlines()[-1]


@pytest.mark.slurm
@pytest.mark.timeout(120)
def test_crash_loop_held_after_two_attempts_with_its_signature(
    cli: Cli,
    slurm: Slurm,
    slurm_cluster: control.Cluster,
    job_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    accounting = bool(getattr(slurm_cluster, "accounting", False))
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    hb = tmp_path / "hb.json"
    job = _submit(cli, script, job_name, "0-9%1", hb)
    args = (job_name, "--heartbeat", str(hb), "--log", f"{job_name}-%A_%a.out", "--short", "2m")

    def looping() -> tuple[int, dict] | None:  # type: ignore[type-arg]
        code, res = _watch(cli, *args)
        seen.append(res["summary"])
        # the signature may follow a sweep later: srun's output can lag the attempt's end
        return (code, res) if code == 2 and "CUDA" in res["summary"] else None

    seen: list[str] = []
    try:
        _, res = wait_for(looping, 60, 0.5, "the crash loop")  # type: ignore[misc]
    finally:
        print("last results:", *seen[-3:], sep="\n")
        for log in sorted(tmp_path.glob("*.out")):
            print(log, oct(log.stat().st_mode), repr(log.read_text()[-300:]))
    summary, fields = res["summary"], res["fields"]
    assert "crash loop" in summary and "CUDA out of memory" in summary, summary
    assert f"scontrol release {job}" in summary and fields["release"] == f"scontrol release {job}"
    state = "FAILED" if accounting else "ENDED"
    assert fields["signature"] == "CUDA out of memory" and fields["state"] == state
    assert fields["exit_code"] == "exit 1" and "OutOfMemoryError" in fields["log_tail"]
    assert ("source" not in fields) == accounting
    assert int(fields["attempts"]) <= 3  # found after two attempts (a third may have started)
    # the rest of the array is held, not burned
    pending = wait_for(
        lambda: [j for j in slurm.squeue(names=[job_name]) if j.state == "PENDING"], 20, 0.5
    )
    assert all(j.reason in ("JobHeldUser", "JobHeldAdmin") for j in pending), (pending, fields)  # type: ignore[union-attr]
    # the job watchdog does not call the held, crash-looping array's pending tasks OK
    jres = cli("watch", "job", "--name", job_name, "--no-notify")
    assert jres.code == 2 and "crash-looping" in jres.out, jres.out
    hist = cli("history", job_name, "--heartbeat", str(hb), "--log", f"{job_name}-%A_%a.out")
    assert hist.code == 0 and "CUDA out of memory" in hist.out
    assert ("source: sacct" in hist.out) == accounting


@pytest.mark.slurm
@pytest.mark.timeout(120)
def test_exhausted_without_finished_then_a_finished_run(
    cli: Cli, slurm: Slurm, job_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    hb = run / "heartbeat.json"
    # a training that hangs at step 15: stalled; cancelled: exhausted without finished()
    toy = f"--steps 100 --step-seconds 0.05 --dir {run} --hang-at 15"
    _submit(cli, TOY, job_name, "0-1%1", hb, "--args", toy)
    args = (job_name, "--heartbeat", str(hb), "--crash-loop", "9", "--stalled", "3s")
    args += ("--no-accounting",)

    def stalled() -> dict | None:  # type: ignore[type-arg]
        code, res = _watch(cli, *args)
        return res if code == 2 and "stalled" in res["summary"] else None

    res = wait_for(stalled, 60, 1, "stalled")
    assert "highest step 14 not grown" in res["summary"], res["summary"]  # type: ignore[index]
    slurm.scancel(name=job_name)

    def exhausted() -> dict | None:  # type: ignore[type-arg]
        code, res = _watch(cli, *args)
        return res if code == 2 and "exhausted" in res["summary"] else None

    res = wait_for(exhausted, 30, 1, "exhausted")
    assert "exhausted without finished() at step 14" in res["summary"], res  # type: ignore[index]
    assert res["fields"]["source"] == "degraded (no accounting)"  # type: ignore[index]
    # cancelled: the batch script traps the TERM and writes the attempt's end record
    assert res["fields"]["state"] == "ENDED"  # type: ignore[index]
    # a second run that finishes: finished() cancels the rest of its array, and neither the
    # job watchdog nor the run watchdog calls that anything but finished
    name2 = job_name + "-ok"
    run2 = tmp_path / "run2"
    hb2 = run2 / "heartbeat.json"
    toy2 = f"--steps 20 --step-seconds 0.05 --dir {run2}"
    try:
        _submit(cli, TOY, name2, "0-3%1", hb2, "--args", toy2)
        wait_for(lambda: not slurm.squeue(names=[name2], states="PENDING,RUNNING"), 60, 0.5)
        # asked by the name alone, the job watchdog finds the heartbeat rtool submit recorded:
        # its done marker agrees with how Slurm says the array ended (a task COMPLETED, the
        # rest CANCELLED by finished()), so the run is finished, not "neither running nor queued"
        jres = cli("watch", "job", "--name", name2, "--no-notify")
        assert jres.code == 0 and f"{name2} finished at step 19 (the run is done)" in jres.out, (
            jres.out
        )
        code, res = _watch(cli, name2)  # the run watchdog too, by the name alone
        assert code == 0 and "finished at step 19" in res["summary"], res
        (tmp_path / "rtool.toml").write_text(
            f'[[watch.job]]\nname = "{name2}"\nheartbeat = "{hb2}"\n'
        )
        jres = cli("--config", str(tmp_path / "rtool.toml"), "watch", "all", "--no-notify")
        assert jres.code == 0 and "finished" in jres.out, jres.out
    finally:
        slurm.scancel(name=name2)


@pytest.fixture
def node_back(slurm_cluster: control.Cluster) -> Iterator[list[str]]:
    """Nodes a test failed: brought back afterwards, whatever happened."""
    touched: list[str] = []
    yield touched
    for name in touched:
        slurm_cluster.revive_node(name, timeout=60)


@pytest.mark.slurm
@pytest.mark.timeout(120)
def test_node_failure_attempt_shows_the_node(
    cli: Cli,
    slurm: Slurm,
    slurm_cluster: control.Cluster,
    job_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    node_back: list[str],
) -> None:
    if not getattr(slurm_cluster, "accounting", False):
        pytest.fail("this test needs the 3-node cluster with accounting")
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    hb = run / "heartbeat.json"
    toy = f"--steps 3000 --step-seconds 0.05 --dir {run}"
    _submit(cli, TOY, job_name, "0-1%1", hb, "--args", toy, "--requeue")

    def running() -> str | None:
        jobs = [j for j in slurm.squeue(names=[job_name]) if j.state == "RUNNING"]
        return jobs[0].nodelist if jobs and hb.exists() else None

    node = str(wait_for(running, 60, 0.5, "the first attempt running"))

    def stepping() -> bool:
        try:
            return json.loads(hb.read_text()).get("step") is not None
        except (OSError, ValueError):
            return False

    wait_for(stepping, 30, 0.5, "the first steps")
    assert cli("history", job_name, "--heartbeat", str(hb)).code == 0  # a sweep sees it run
    slurm_cluster.fail_node(node)
    node_back.append(node)

    def failed_attempt() -> dict | None:  # type: ignore[type-arg]
        res = cli("history", job_name, "--heartbeat", str(hb), "--json")
        if res.code != 0:
            return None
        attempts = json.loads(res.out)["ledger"]["attempts"]
        return next((a for a in attempts if a["state"] == "NODE_FAIL"), None)

    a = wait_for(failed_attempt, 60, 1, "the NODE_FAIL attempt in the ledger")
    assert a["nodes"] == [node] and a["signature"]["name"] == "node-fail"  # type: ignore[index]
    assert a["step_end"] is not None  # type: ignore[index]  # its steps, seen by the sweep


LIAR = """\
import json, os, sys, time
hb = os.environ["RTOOL_HEARTBEAT"]
me = {"job_id": os.environ["SLURM_JOB_ID"], "restart_count": 0, "run": os.environ["RTOOL_RUN"]}
if os.environ.get("SLURM_ARRAY_JOB_ID"):
    me.update(array_job_id=os.environ["SLURM_ARRAY_JOB_ID"],
              array_task_id=os.environ["SLURM_ARRAY_TASK_ID"])
with open(hb, "w") as f:
    json.dump({"state": "finished", "time": time.time(), "step": 5, **me}, f)
open(hb + ".done", "w").close()  # an empty done marker
sys.exit(1)
"""


@pytest.mark.slurm
@pytest.mark.timeout(120)
def test_a_done_marker_without_slurms_word_is_not_finished(
    cli: Cli, slurm: Slurm, job_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 6: the training said finished (heartbeat and an empty done marker) but exited 1:
    neither the run nor the job watchdog calls it finished, with or without accounting."""
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "liar.py"
    script.write_text(LIAR)
    hb = tmp_path / "run" / "heartbeat.json"
    hb.parent.mkdir()
    _submit(cli, script, job_name, "0", hb)
    busy = "PENDING,RUNNING,COMPLETING"
    wait_for(lambda: not slurm.squeue(names=[job_name], states=busy), 60, 0.5, "the job's end")
    for more in ((), ("--no-accounting",)):

        def settled(more: tuple[str, ...] = more) -> dict | None:  # type: ignore[type-arg]
            _, res = _watch(cli, job_name, "--heartbeat", str(hb), *more)
            return res if res["fields"].get("state") in ("FAILED", "ENDED") else None

        res = wait_for(settled, 60, 1, "the attempt's end")
        assert res["status"] == "CRITICAL" and "finished" not in res["summary"].split("without")[0]
        assert "exhausted without finished()" in res["summary"], res
    (tmp_path / "rtool.toml").write_text(
        f'[[watch.job]]\nname = "{job_name}"\nheartbeat = "{hb}"\n'
    )
    jres = cli("--config", str(tmp_path / "rtool.toml"), "watch", "all", "--no-notify")
    assert jres.code == 2 and "finished" not in jres.out, jres.out


@pytest.mark.slurm
@pytest.mark.timeout(150)
def test_history_lists_every_attempt_sacct_shows_of_a_crash_looping_array(
    cli: Cli, slurm: Slurm, job_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35.9: sacct showed 2 FAILED attempts while `rtool history --json` listed 1."""
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "crash.py"
    script.write_text(CRASH.replace("time.sleep(3)", "time.sleep(1)"))
    hb = tmp_path / "hb.json"
    _submit(cli, script, job_name, "0-9%1", hb)

    def failed() -> list[str] | None:
        argv = ["sacct", "-X", "-n", "-P", "-D", f"--name={job_name}", "-o", "JobID,State"]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
        rows = [ln.split("|") for ln in out.splitlines() if ln.strip()]
        found = [jid for jid, state in rows if state.startswith("FAILED")]
        _watch(cli, job_name, "--heartbeat", str(hb), "--on-crash-loop", "none")  # stores it
        return found if len(found) >= 2 else None

    try:
        seen = wait_for(failed, 90, 1, "2 FAILED attempts in sacct")
    finally:
        slurm.scancel(name=job_name)  # the rest of the array
    hist = cli("history", job_name, "--heartbeat", str(hb), "--json")
    assert hist.code == 0, hist.err
    attempts = json.loads(hist.out)["ledger"]["attempts"]
    shown = [a["job_id"] for a in attempts if a["state"] == "FAILED"]
    assert set(seen) <= set(shown), (seen, attempts)
    assert len(attempts) >= len(seen)
