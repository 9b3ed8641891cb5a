"""What the demo does not show: a plain (non-array) job that hangs is caught by the log
watchdog through the shim's heartbeat, requeued, and resumes in the SAME job; the alert reaches
the test's own SMTP and Slack-like servers once, with a resolved notice (real Slurm, real
servers, `rtool` processes)."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from devtools.demo.observe import account, saves_by_pid
from devtools.servers import SlackLikeServer, SmtpServer
from rtool.core.slurm import Slurm
from tests.e2e.conftest import TOY, RtoolRun, outputs_of, steps_of
from tests.helpers import wait_for

STEPS = 150


def _config(tmp: Path, name: str, smtp: SmtpServer, slack: SlackLikeServer) -> None:
    secret = tmp / "slack-url"
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(slack.webhook_url)
    q = json.dumps
    (tmp / "rtool.toml").write_text(
        f"""
[state]
dir = {q(str(tmp / "state"))}
[notify]
repeat_interval = "0"
[notify.log]
path = {q(str(tmp / "alerts.log"))}
[notify.email]
host = "127.0.0.1"
port = {smtp.port}
starttls = false
sender = "rtool@localhost"
to = ["ops@localhost"]
[notify.slack]
webhook_url_file = {q(str(secret))}
[[watch.log]]
path = {q(str(tmp / "job" / f"{name}-*.out"))}
heartbeat = {q(str(tmp / "job" / "run" / "heartbeat.json"))}
stale = "6s"
job_name = {q(name)}
on_hang = "requeue"
"""
    )


def _checkpoint(run: Path) -> int:
    try:
        return int(json.loads((run / "checkpoint.json").read_text())["step"])
    except (FileNotFoundError, ValueError, KeyError):
        return -1


@pytest.mark.slurm
@pytest.mark.timeout(240)
def test_hung_job_is_requeued_resumes_itself_and_alerts_once(
    tmp_path: Path,
    rtool: RtoolRun,
    slurm: Slurm,
    job_name: str,
    smtp_server: SmtpServer,
    slack_server: SlackLikeServer,
) -> None:
    _config(tmp_path, job_name, smtp_server, slack_server)
    job_dir, run = tmp_path / "job", tmp_path / "job" / "run"
    run.mkdir(parents=True)
    toy_args = ["--steps", str(STEPS), "--step-seconds", "0.1", "--dir", str(run)]
    toy_args += ["--hang-file", str(job_dir / "hang")]
    job = rtool(
        *("submit", str(TOY), "--job-name", job_name, "--time", "0:05:00"),
        *("--signal", "B:USR1@60", "--requeue", "--python", sys.executable, "--hang-after", "off"),
        *("--heartbeat", str(run / "heartbeat.json"), "--args", shlex.join(toy_args)),
        *("--parsable", "--", "--open-mode=append"),
        cwd=job_dir,
        env={"RTOOL_HEARTBEAT_INTERVAL": "1s"},
    ).stdout.strip()

    wait_for(lambda: len(steps_of(run)) >= 20, 60, 0.2, "20 steps")
    rtool("save", "--job-name", job_name, cwd=job_dir)
    wait_for(lambda: _checkpoint(run) >= 19, 20, 0.2, "the save")
    saved = _checkpoint(run)
    (job_dir / "hang").touch()
    wait_for(lambda: "hanging at step" in next(job_dir.glob("*.out")).read_text(), 20, 0.2, "hang")

    # The watchdog, every 2 s (the cron emulator does this in the demo), until the job is done.
    codes: list[int] = []
    deadline = time.monotonic() + 150
    out = next(job_dir.glob("*.out"))
    while "training finished" not in out.read_text():
        assert time.monotonic() < deadline, f"the job did not finish; sweeps: {codes}"
        codes.append(rtool("watch", "all", check=False).returncode)
        time.sleep(2)

    assert 2 in codes  # CRITICAL while hung
    (record,) = slurm.show_job(job)
    assert record["Restarts"] == "1"  # requeued once, by the watchdog
    # the same job resumed right after the save and finished: 0..N-1, nothing twice after a save
    lines = steps_of(run)
    acc = account(lines, saves_by_pid(outputs_of(job_dir, "*.out")))
    assert acc.ok, acc.as_dict()
    assert sorted({s.step for s in lines}) == list(range(STEPS))
    assert {s.job for s in lines} == {job} and acc.runs == 2
    assert acc.resumes[1][1] == saved + 1
    assert acc.final_checkpoint == STEPS - 1

    # once each, then resolved; the resolved mail is threaded under the alert
    subjects = [str(m["Subject"]) for m in smtp_server.messages]
    assert len(subjects) == 2, subjects
    assert subjects[0].startswith("[rtool CRITICAL] log ") and "not written for" in subjects[0]
    assert subjects[1].startswith("[rtool RESOLVED] log ")
    first, resolved = smtp_server.messages
    assert resolved["In-Reply-To"] == first["Message-Id"]
    texts = [str(r["body"].get("text")) for r in slack_server.accepted]
    assert len(texts) == 2, texts
    assert texts[0].startswith("[rtool CRITICAL] log ") and texts[1].startswith("[rtool RESOLVED]")
