"""Issue 36, continued: what rtool prints and writes (pages, --json), what it reads from
Slurm (`scontrol show job` free text) and the cross-rank abort file, tried as the second Unix
user (`rtool-peer`) would."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.localslurm.users import LocalUser


@pytest.fixture
def sticky() -> Iterator[Path]:
    """A shared sticky folder (1777, like /tmp or a team scratch): anyone may add entries."""
    d = Path(tempfile.mkdtemp(prefix="rtool-sticky-"))
    d.chmod(0o1777)
    yield d
    subprocess.run(["rm", "-rf", "--", str(d)], check=False)


SECRETS = (
    "https://hooks.slack.com/services/T000/B000/XXXXSECRETXXXX",
    "xoxb-1234-5678-SECRETTOKEN",
    "https://user:hunter2pass@example.org/data",
    "https://api.example.org/v1?token=SECRETQUERY",
    "password=SECRETPASSWORD",
)


def test_pages_and_json_are_redacted_like_alerts_and_private_by_default(
    tmp_path: Path, cli
) -> None:
    """Finding 5: the training printed secrets; the pages and `--json` mask them as alerts do,
    and a page is 0600 unless --mode says otherwise."""
    from rtool.core.state import StateDir
    from rtool.runs import store
    from rtool.runs.signatures.base import Signature
    from tests.timeline.ledgers import ledger

    led = ledger(3, run="leaky", running=False)
    sig = Signature("python-exception", "crash " + SECRETS[0], "line " + SECRETS[1])
    led.attempts[1] = led.attempts[1].with_(signature=sig, log_tail=SECRETS, error=SECRETS[2])
    store.save(StateDir(tmp_path / "state"), led)
    config = tmp_path / "rtool.toml"
    config.write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')
    base = ("--config", str(config))
    page, status_page = tmp_path / "run.html", tmp_path / "status.html"
    assert cli(*base, "history", "leaky", "--stored", "--html", str(page)).code == 0
    assert cli(*base, "status", "--html", str(status_page)).code == 0
    res = cli(*base, "history", "leaky", "--stored", "--json")
    assert res.code == 0
    for text in (page.read_text(), status_page.read_text(), res.out):
        for secret in ("XXXXSECRETXXXX", "SECRETTOKEN", "hunter2pass", "SECRETQUERY", "SECRETPA"):
            assert secret not in text
        assert "hooks.slack.com/***" in text
    assert "token=***" in res.out and "https://***@example.org" in res.out
    assert page.stat().st_mode & 0o777 == 0o600 and status_page.stat().st_mode & 0o777 == 0o600
    res = cli(*base, "history", "leaky", "--stored", "--html", str(page), "--mode", "0644")
    assert res.code == 0 and page.stat().st_mode & 0o777 == 0o644
    res = cli(*base, "history", "leaky", "--stored", "--html", str(page), "--mode", "4755")
    assert res.code == 2
    assert res.err.strip().splitlines() == [
        "rtool: --mode '4755': give an octal file mode such as 0600 or 0644"
    ]


@pytest.mark.slurm
def test_a_userid_in_free_text_does_not_make_another_users_job_yours(
    slurm, job_name: str, peer_cluster: LocalUser, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Finding 7: the other user's job with ` UserId=root(0)` (root: the user these tests run
    as) in its name, Comment and WorkDir stays theirs; yours is still acted on."""
    from rtool.core.slurm import ForeignJob

    spoof = " UserId=root(0) GroupId=root(0) JobState=COMPLETED"
    work = peer_cluster.folder("w-")
    odd = work / ("d" + spoof)
    peer_cluster.run(["mkdir", str(odd)])
    argv = ["sbatch", "--parsable", f"--job-name={job_name}{spoof}", "--hold",
            f"--comment=c{spoof}", f"--chdir={odd}", "--output=/dev/null"]  # fmt: skip
    theirs = peer_cluster.run(argv, input="#!/bin/sh\nsleep 300\n").stdout.strip().split(";")[0]
    try:
        (rec,) = slurm.show_job(theirs)
        assert rec["UserId"] == f"{peer_cluster.name}({peer_cluster.uid})"
        assert rec["JobName"] == job_name + spoof and rec["JobState"] == "PENDING"
        with pytest.raises(ForeignJob, match="not to you"):
            slurm.requeue(theirs, hold=True)
        with pytest.raises(ForeignJob, match="not to you"):
            slurm.release(theirs)
        mine = slurm.sbatch(
            [f"--job-name={job_name}", "--hold", f"--comment=c{spoof}", "--output=/dev/null"],
            script="#!/bin/sh\nsleep 300\n",
        ).job_id
        slurm.release(mine)  # yours: acted on
        (rec,) = slurm.show_job(mine)
        assert rec["UserId"] == "root(0)" and rec["Reason"] != "JobHeldUser"
    finally:
        peer_cluster.run(["scancel", theirs], check=False)
        slurm.scancel(name=job_name)
        peer_cluster.remove(work)


def test_an_abort_file_another_user_made_first_cannot_silence_the_ranks(
    sticky: Path, peer: LocalUser, capfd: pytest.CaptureFixture[str]
) -> None:
    """Finding 7: in a shared sticky folder the other user pre-creates the abort file the
    batch script used to name (its `rm -f` cannot remove theirs, the first rank's O_EXCL write
    fails): now the batch script names one in a fresh 0700 folder of its own."""
    from rtool.shim.hang import Abort, read_abort, write_abort
    from rtool.slurm_templates.jobs import render_job
    from tests.submit.test_render import training

    kill = sticky / "kill-switch"
    old = f"{kill}.abort-77"
    peer.run(["touch", old])
    write_abort(old, Abort(1, "n2", 4242, 0, "hung", "no step for 9s"))
    assert read_abort(old, launch=0, pid=1) is None  # the abort is lost there...
    assert f"ignoring abort file {old}: it is owned by uid {peer.uid}" in capfd.readouterr().err
    text = render_job(training(kill_switch=str(kill)))
    start = text.index('if [ -z "${RTOOL_ABORT_FILE:-}" ]; then')
    snippet = text[start : text.index("\nfi\n", start) + 4] + 'printf %s "$RTOOL_ABORT_FILE"\n'
    env = {"PATH": os.environ["PATH"], "RTOOL_KILL_SWITCH": str(kill), "SLURM_JOB_ID": "77"}
    path = subprocess.run(
        ["bash", "-c", snippet], env=env, capture_output=True, text=True, check=True
    ).stdout
    folder = Path(path).parent
    assert path.startswith(f"{old}.") and path.endswith("/abort"), path
    assert folder.stat().st_uid == os.getuid() and folder.stat().st_mode & 0o777 == 0o700
    write_abort(path, Abort(1, "n2", 4242, 0, "hung", "no step for 9s"))  # ...and kept here
    got = read_abort(path, launch=0, pid=1)
    assert got is not None and got.text() == "rank 1 on n2 hung: no step for 9s"
