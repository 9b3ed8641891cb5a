"""Slurm-aware quieting on the real local multi-node Slurm: a drained node under a hung run is
one alert (the job, log and run watchdogs' alerts folded into it), and once the node is back
one resolved notice that names what is still bad (the hang); a run pending on a maintenance
reservation says until when, instead of pending too long."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devtools.localslurm import control
from devtools.servers import SlackLikeServer
from rtool.core.heartbeat import read_heartbeat
from rtool.core.slurm import Slurm
from tests.helpers import wait_for
from tests.servers.fixtures import slack_server

__all__ = ["slack_server"]
TOY = Path(__file__).resolve().parents[2] / "examples" / "train_toy.py"


def config(tmp: Path, name: str, hb: Path, slack: SlackLikeServer) -> Path:
    path = tmp / "rtool.toml"
    path.write_text(
        f'[state]\ndir = "{tmp / "state"}"\n'
        f'[notify.slack]\nwebhook_url_env = "SLACK_URL"\nretry_interval = "0.05s"\n'
        f'[[watch.job]]\nname = "{name}"\n'
        f'[[watch.log]]\npath = "{hb}"\nheartbeat = "{hb}"\nstale = "3s"\njob_name = "{name}"\n'
        f'[[watch.run]]\nname = "{name}"\nheartbeat = "{hb}"\nstalled = "3s"\n'
    )
    return path


def texts(slack: SlackLikeServer) -> list[str]:
    return [str(m["body"].get("text", "")) for m in slack.accepted]


@pytest.mark.slurm
@pytest.mark.timeout(240)
def test_a_drained_node_under_a_hung_run_is_one_alert_and_one_resolved_notice(
    slurm_cluster: control.Cluster,
    cli: Callable[..., Any],
    tmp_path: Path,
    job_name: str,
    slack_server: SlackLikeServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLACK_URL", slack_server.webhook_url)
    run, hang = tmp_path / "run", tmp_path / "hang-now"
    cfg = str(config(tmp_path, job_name, run / "hb.json", slack_server))
    args = f"--steps 100000 --step-seconds 0.2 --dir {run} --hang-file {hang}"
    sub = cli(
        "--config", cfg, "submit", str(TOY), "--job-name", job_name, "--auto-requeue",
        "--time", "20:00", "--heartbeat", str(run / "hb.json"), "--python", sys.executable,
        "--args", args, "--", "--nodelist=n3",
    )  # fmt: skip
    assert sub.code == 0, sub.err
    wait_for(lambda: (hb := read_heartbeat(run / "hb.json")) and hb.step, 90, 0.5, "a step")
    hang.touch()  # the training hangs ...
    slurm_cluster.drain_node("n3", "GPU 3 fell off the bus")  # ... and its node is drained
    try:
        wait_for(lambda: not hang.exists(), 30, 0.5, "the toy to hang")
        wait_for(lambda: (hb := read_heartbeat(run / "hb.json")) and hb.time < time.time() - 4,
                 30, 0.5, "the heartbeat to go stale")  # fmt: skip
        first = cli("--config", cfg, "watch", "all")
        assert first.code == 2, first.out + first.err
        node = next(ln for ln in first.out.splitlines() if ln.startswith("NODE"))
        assert node.startswith("NODE CRITICAL - n3 ") and "GPU 3 fell off the bus" in node
        assert f"log:{run / 'hb.json'} (CRITICAL" in node and f"run:{job_name} (CRITICAL" in node
        assert f"job:{job_name} (WARNING" in node and "3 alerts follow from it" in node
        assert len(slack_server.accepted) == 1 and "node n3" in texts(slack_server)[0]
        assert cli("--config", cfg, "watch", "all").code == 2
        assert len(slack_server.accepted) == 1  # still one: the rest stay folded
    finally:
        slurm_cluster.revive_node("n3")
    back = cli("--config", cfg, "watch", "all")
    assert back.code == 2, back.out
    still = f"still bad on their own: log:{run / 'hb.json'} (CRITICAL), run:{job_name} (CRITICAL)"
    assert f"NODE OK - n3: no alert follows from it any more; {still}" in back.out, back.out
    sent = texts(slack_server)[1:]
    assert len(sent) == 1, sent  # one notice: the node is back, the hang goes on
    resolved = sent[0]
    assert resolved.startswith("[rtool RESOLVED] node n3") and still in resolved, resolved


def _scontrol(cluster: control.Cluster, *args: str) -> None:
    subprocess.run(["scontrol", *args], env=cluster.env, check=True, timeout=30)


@pytest.mark.slurm
@pytest.mark.timeout(120)
def test_a_run_pending_on_a_maintenance_reservation_says_until_when(
    slurm_cluster: control.Cluster, slurm: Slurm, cli: Callable[..., Any], job_name: str
) -> None:
    name = f"rt-maint-{uuid.uuid4().hex[:6]}"
    _scontrol(
        slurm_cluster, "create", "reservation", f"ReservationName={name}", "StartTime=now",
        "Duration=30", "Nodes=n3", "Users=root", "Flags=MAINT",
    )  # fmt: skip
    try:
        job = slurm.sbatch(["-J", job_name, "-w", "n3", "--time=10", "-o", "/dev/null"],
                           script="#!/bin/bash\nsleep 60\n")  # fmt: skip
        wait_for(lambda: [j for j in slurm.squeue(job_ids=[job.job_id]) if j.reason], 30)
        r = cli("watch", "job", "--name", job_name, "--max-pending", "1s", "--no-notify")
        assert r.code == 0, r.out
        assert r.out.startswith(f"JOB OK - {job_name} pending for "), r.out
        assert f"until the maintenance reservation {name} ends at " in r.out, r.out
    finally:
        _scontrol(slurm_cluster, "delete", f"ReservationName={name}")
    r = cli("watch", "job", "--name", job_name, "--max-pending", "1s", "--no-notify")
    assert "reservation" not in r.out  # gone: the usual verdicts again
