"""Issue 36: the new features act on what they checked, never on a path re-read.

Each finding is reproduced as the second Unix user (`rtool-peer`) would: a symlink planted in
a shared sticky folder, a file swapped into a folder others can write, a racing rename. Each
test also shows the feature still working on your own files.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.localslurm.users import LocalUser, shared_folder
from rtool.core import fdwalk
from rtool.core.safeio import UnsafeFileError
from tests.watchdogs.ckptfiles import folder_ckpt


@pytest.fixture
def sticky() -> Iterator[Path]:
    """A shared sticky folder (1777, like /tmp or a team scratch): anyone may add entries."""
    d = Path(tempfile.mkdtemp(prefix="rtool-sticky-"))
    d.chmod(0o1777)
    yield d
    subprocess.run(["rm", "-rf", "--", str(d)], check=False)


@pytest.fixture
def shared(peer: LocalUser) -> Iterator[Path]:
    """A project folder of yours that the other user may write into (2775, shared group)."""
    d = shared_folder(peer)
    yield d
    subprocess.run(["rm", "-rf", "--", str(d)], check=False)


def _steps(folder: Path, *steps: int) -> None:
    for i, step in enumerate(steps):
        folder_ckpt(folder, f"step_{step:06d}", old=(len(steps) - i) * 100.0)


def _watch_ckpt(cli, folder: Path, *flags: str) -> dict:  # type: ignore[no-untyped-def]
    res = cli("watch", "checkpoint", str(folder), *flags, "--json", "--no-notify")
    assert res.code in (0, 1, 2, 3), res.out + res.err
    return json.loads(res.out)["results"][0]


def test_the_walk_refuses_planted_links_and_folders_others_can_write(
    tmp_path: Path, sticky: Path, shared: Path, peer: LocalUser
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "f").write_text("x")
    os.symlink(mine, sticky / "my-link")  # a link of yours: followed
    assert fdwalk.read_checked(sticky / "my-link" / "f")[0] == b"x"
    peer.run(["ln", "-s", str(mine), str(sticky / "their-link")])
    with pytest.raises(UnsafeFileError, match=f"a symlink owned by uid {peer.uid}"):
        fdwalk.read_checked(sticky / "their-link" / "f")
    (shared / "sub").mkdir()
    (shared / "sub" / "f").write_text("y")
    with pytest.raises(UnsafeFileError, match=r"writable by group \(mode 2775\) without the st"):
        fdwalk.read_checked(shared / "sub" / "f")
    peer.run(["sh", "-c", 'echo theirs > "$1"', "plant", str(sticky / "planted")])
    with pytest.raises(UnsafeFileError, match=f"owned by uid {peer.uid}, not by you or root"):
        fdwalk.read_checked(sticky / "planted")


def test_retention_never_deletes_through_a_link_another_user_planted(
    tmp_path: Path, sticky: Path, peer: LocalUser, cli
) -> None:
    old_run = tmp_path / "old-run"  # an older run's checkpoints of yours, 0755
    _steps(old_run, 100, 200, 300, 400)
    peer.run(["ln", "-s", str(old_run), str(sticky / "ckpt")])
    r = _watch_ckpt(cli, sticky / "ckpt", "--keep-last", "2")
    assert r["status"] == "UNKNOWN", r
    assert (
        f"refusing the folder: {sticky}/ckpt is a symlink owned by uid {peer.uid}" in (r["summary"])
    )
    assert len(list(old_run.iterdir())) == 4
    # a folder above the checkpoints, planted the same way
    peer.run(["ln", "-sfn", str(tmp_path), str(sticky / "runs")])
    r = _watch_ckpt(cli, sticky / "runs" / "old-run", "--keep-last", "2")
    assert r["status"] == "UNKNOWN" and len(list(old_run.iterdir())) == 4
    # your own folder, reached through your own link there: still pruned
    os.symlink(old_run, sticky / "mine")
    r = _watch_ckpt(cli, sticky / "mine", "--keep-last", "2")
    assert r["fields"]["retention"] == f"deleted step_000100, step_000200 in {sticky}/mine"
    assert sorted(p.name for p in old_run.iterdir()) == ["step_000300", "step_000400"]


def test_the_prune_acts_on_the_walked_folder_not_on_a_renamed_path(
    shared: Path, tmp_path: Path, peer: LocalUser
) -> None:
    """The prune runs later than the scan: a folder others may rename things in, on the way,
    refuses it (the hooked moment: the other user swapped the path just before)."""
    from rtool.watchdogs.actions import delete
    from rtool.watchdogs.base import Action

    precious = tmp_path / "precious"
    _steps(precious, 100, 200)
    ck = shared / "ckpt"
    _steps(ck, 100, 200)
    peer.run(["mv", str(ck), str(shared / "moved")])  # group-writable, not sticky: they can
    peer.run(["ln", "-s", str(precious), str(ck)])
    out = delete(Action.delete(str(ck), ("step_000100",)), 30.0)
    assert out.startswith(f"deleting in {ck} failed: refusing the folder"), out
    assert len(list(precious.iterdir())) == 2
    (shared / "moved").chmod(0o755)
    out = delete(Action.delete(str(shared / "moved"), ("step_000100",)), 30.0)
    assert "writable by group or others (mode 2775) without the sticky bit" in out
    assert len(list((shared / "moved").iterdir())) == 2


def test_a_config_swapped_in_while_it_is_read_never_counts(shared: Path, peer: LocalUser) -> None:
    """Finding 4: the other user renames their file over ./rtool.toml and back, in a loop,
    while rtool reads it: every read is yours or refused, never theirs."""
    from rtool.core.config import ConfigError, read_trusted_config

    conf = shared / "rtool.toml"
    conf.write_text('# mine\n[notify]\nchannels = ["mine"]\n')
    conf.chmod(0o644)
    theirs = shared / "evil.toml"
    peer.run(["sh", "-c", 'echo "# theirs" > "$1"', "plant", str(theirs)])
    swap = (
        'end=$(($(date +%s) + 4)); while [ "$(date +%s)" -lt "$end" ]; do '
        'mv -f "$1/rtool.toml" "$1/keep"; mv -f "$1/evil.toml" "$1/rtool.toml"; '
        'mv -f "$1/rtool.toml" "$1/evil.toml"; mv -f "$1/keep" "$1/rtool.toml"; done'
    )
    racer = subprocess.Popen(
        [
            "setpriv",
            f"--reuid={peer.uid}",
            f"--regid={peer.gid}",
            "--init-groups",
            "sh",
            "-c",
            swap,
            "swap",
            str(shared),
        ]
    )
    mine = refused = 0
    try:
        while racer.poll() is None:
            try:
                text = read_trusted_config(conf)
            except ConfigError as exc:
                text = str(exc)
                if "No such file" in text:
                    continue
                assert f"it is owned by uid {peer.uid}, not by you or root" in text, text
                refused += 1
                continue
            assert text.startswith("# mine"), text
            mine += 1
    finally:
        racer.wait(timeout=30)
    assert mine and refused, (mine, refused)
    assert read_trusted_config(conf).startswith("# mine")  # yours is still read


@pytest.fixture
def open_parent(peer: LocalUser) -> Iterator[Path]:
    """A folder of yours (0755) in the system temp folder: the other user can reach into it."""
    d = Path(tempfile.mkdtemp(prefix="rtool-mine-"))
    d.chmod(0o755)
    yield d
    subprocess.run(["rm", "-rf", "--", str(d)], check=False)


def _job(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_cron_folder_others_can_write_is_refused_with_a_message(
    open_parent: Path, peer: LocalUser
) -> None:
    """Finding 2: a team-writable cron.hourly/ lets another user rename a script over a
    checked one; the folder is refused whole (the other periods still run)."""
    import grp

    from rtool.cron import manage
    from rtool.cron.jobs import scan

    root = open_parent / "cron"
    manage.init(root)
    hourly = root / "cron.hourly"
    _job(hourly, "a.sh", "#!/bin/sh\necho mine\n")
    _job(root / "cron.daily", "d.sh", "#!/bin/sh\necho daily\n")
    os.chown(hourly, -1, grp.getgrnam("rtool-peers").gr_gid)
    hourly.chmod(0o2775)
    peer.run(["sh", "-c", 'printf "#!/bin/sh\\nid\\n" > "$1/t" && mv -f "$1/t" "$1/a.sh"',
              "swap", str(hourly)])  # fmt: skip
    found = scan(root)
    assert [j.name for j in found.jobs] == ["cron.daily/d.sh"]
    assert found.warnings == [
        f"cron.hourly: not run (the folder is writable by group (mode 2775); "
        f"run: chmod go-w {hourly})"
    ]
    hourly.chmod(0o755)
    (hourly / "a.sh").unlink()  # theirs, gone; yours again runs
    _job(hourly, "a.sh", "#!/bin/sh\necho mine\n")
    assert [j.name for j in scan(root).jobs] == ["cron.hourly/a.sh", "cron.daily/d.sh"]
    # the cron folder itself in a folder others may rename things in: refused whole
    open_parent.chmod(0o777)
    found = scan(root)
    assert found.jobs == [] and "without the sticky bit" in found.warnings[0], found.warnings


def test_a_cron_job_runs_the_bytes_that_were_checked(open_parent: Path) -> None:
    """A file renamed over a checked job between the scan and the run (the hooked moment: an
    earlier job of the same tick did it) does not run; what was checked does."""
    from rtool.core.slurm import Slurm
    from rtool.cron import manage
    from rtool.cron.jobs import scan
    from rtool.cron.runner import run_job

    root = open_parent / "cron"
    manage.init(root)
    _job(root / "cron.hourly", "b.sh", '#!/bin/sh\necho "checked $RTOOL_CRON_JOB"\n')
    found = scan(root)
    _job(root, "swapped", "#!/bin/sh\necho swapped\n").rename(root / "cron.hourly" / "b.sh")
    result = run_job(found.jobs[0], root, timeout=30, slurm=Slurm(timeout=5))
    assert result.status == "ok", result
    assert Path(str(result.log)).read_text().startswith("checked cron.hourly/b.sh\n")
    again = run_job(scan(root).jobs[0], root, timeout=30, slurm=Slurm(timeout=5))
    assert Path(str(again.log)).read_text().startswith("swapped\n")  # yours, scanned: runs


def _hb(**keys: object) -> str:
    import time

    base = {"state": "running", "time": time.time() - 7200, "step": 5, "pid": 1, "job_id": "99"}
    return json.dumps({**base, **keys})


def _log_sweep(tmp_path: Path, **spec: object):  # type: ignore[no-untyped-def]
    import time

    from rtool.core.state import StateDir
    from rtool.watchdogs.base import ProbeEnv
    from rtool.watchdogs.config import LogWatch
    from rtool.watchdogs.log import LogWatchdog

    wd = LogWatchdog([LogWatch(**spec)], 10.0)  # type: ignore[arg-type]
    [res] = wd.check(wd.probe(ProbeEnv(None, StateDir(tmp_path / "state"))), time.time())
    return res


def test_watch_log_ignores_a_heartbeat_marker_or_log_another_user_planted(
    tmp_path: Path, sticky: Path, peer: LocalUser
) -> None:
    """Finding 3: in a shared sticky run folder, the other user plants a stale heartbeat naming
    another job of yours (requeue it), a `.done` marker (hide the hang) and a fresh log
    matching the glob (hide the hang); none counts, each is named as ignored."""
    from rtool.core.alert import Status
    from rtool.watchdogs.base import ActionKind

    log = sticky / "train-1.out"
    log.write_text("step 1\n")
    os.utime(log, (1, 1))
    hb = sticky / "hb.json"
    peer.run(["sh", "-c", 'printf "%s" "$2" > "$1"', "plant", str(hb), _hb(job_id="4242")])
    spec = {"path": str(sticky / "train-*.out"), "stale": "30m", "heartbeat": str(hb)}
    r = _log_sweep(tmp_path, **spec, on_hang="requeue", dump_stacks=True)
    assert r.status is Status.CRITICAL, r.summary
    assert not [a for a in r.actions if a.kind in (ActionKind.REQUEUE, ActionKind.DUMP)]
    assert f"ignored (not yours): heartbeat {hb} (owned by uid {peer.uid})" in r.summary
    peer.run(["touch", str(hb) + ".done", str(sticky / "train-2.out")])
    r = _log_sweep(tmp_path, **spec)
    assert r.status is Status.CRITICAL, r.summary
    assert r.fields["ignored"] == (
        f"{sticky}/train-2.out (owned by uid {peer.uid}), heartbeat {hb} (owned by uid"
        f" {peer.uid}), done marker {hb}.done (owned by uid {peer.uid})"
    )
    # your own heartbeat (a file of yours, 0644) still steers: the requeue goes to its job
    mine = tmp_path / "hb.json"
    mine.write_text(_hb(job_id="4242"))
    r = _log_sweep(tmp_path, path=str(log), stale="30m", heartbeat=str(mine), on_hang="requeue")
    assert r.status is Status.CRITICAL and "ignored" not in r.summary, r.summary
    assert [(a.kind, a.job) for a in r.actions] == [(ActionKind.REQUEUE, "4242")]
    (tmp_path / "hb.json.done").touch()
    r = _log_sweep(tmp_path, path=str(log), stale="30m", heartbeat=str(mine))
    assert r.status is Status.OK and "training finished" in r.summary


def test_a_switch_behind_a_link_another_user_planted_does_not_count(
    tmp_path: Path, sticky: Path, peer: LocalUser, caplog: pytest.LogCaptureFixture
) -> None:
    """The other user links a folder name in a shared sticky folder to an older run folder of
    yours that holds a kill switch (yours: the owner check alone passes); your training there
    must not stop. Through your own link, your switch still stops it."""
    import logging

    from rtool.shim import Guard

    old_run = tmp_path / "old-run"
    old_run.mkdir()
    (old_run / "kill-switch").touch()
    peer.run(["ln", "-s", str(old_run), str(sticky / "run")])
    caplog.set_level(logging.WARNING, logger="rtool.shim")
    g = Guard(kill_switch=str(sticky / "run" / "kill-switch"), signals=(), start=False)
    try:
        assert not g.killed
    finally:
        g.close()
    assert (
        f"ignoring kill switch {sticky}/run/kill-switch: refusing {sticky}/run: a symlink owned"
        f" by uid {peer.uid}" in caplog.text
    )
    os.symlink(old_run, sticky / "mine")
    g = Guard(kill_switch=str(sticky / "mine" / "kill-switch"), signals=(), start=False)
    try:
        assert g.killed
    finally:
        g.close()


def test_the_checkpoint_watchdog_ignores_a_heartbeat_another_user_planted(
    tmp_path: Path, sticky: Path, peer: LocalUser, cli
) -> None:
    """A planted heartbeat would set the save pace (and so 'save overdue'): it is ignored and
    named; your own still counts."""
    ck = tmp_path / "ckpt"
    _steps(ck, 100, 200)
    hb = sticky / "hb.json"
    peer.run(["sh", "-c", 'printf "%s" "$2" > "$1"', "plant", str(hb), _hb(step=5000)])
    r = _watch_ckpt(cli, ck, "--heartbeat", str(hb))
    assert r["status"] == "WARNING", r
    assert f"heartbeat: ignored: owned by uid {peer.uid}, not by you" in r["summary"]
    mine = tmp_path / "hb.json"
    mine.write_text(_hb(step=250))
    r = _watch_ckpt(cli, ck, "--heartbeat", str(mine))
    assert "ignored" not in r["summary"] and r["fields"]["training_step"] == "250", r


def test_watch_log_ignores_your_heartbeat_behind_a_link_another_user_planted(
    tmp_path: Path, sticky: Path, peer: LocalUser
) -> None:
    """The other user links a folder name to an older run folder of yours: its stale heartbeat
    (yours, naming another job of yours) must not send a requeue there."""
    from rtool.watchdogs.base import ActionKind

    old_run = tmp_path / "old-run"
    old_run.mkdir()
    (old_run / "hb.json").write_text(_hb(job_id="4242"))
    log = tmp_path / "train.out"
    log.write_text("x\n")
    os.utime(log, (1, 1))
    peer.run(["ln", "-s", str(old_run), str(sticky / "run")])
    hb = sticky / "run" / "hb.json"
    r = _log_sweep(tmp_path, path=str(log), stale="30m", heartbeat=str(hb), on_hang="requeue")
    assert not [a for a in r.actions if a.kind is ActionKind.REQUEUE], r.actions
    assert r.fields["ignored"] == (
        f"heartbeat {hb} ({sticky}/run is a symlink owned by uid {peer.uid})"
    )
    os.symlink(old_run, sticky / "mine")  # your own link: your heartbeat counts
    mine = str(sticky / "mine" / "hb.json")
    r = _log_sweep(tmp_path, path=str(log), stale="30m", heartbeat=mine, on_hang="requeue")
    assert [(a.kind, a.job) for a in r.actions] == [(ActionKind.REQUEUE, "4242")]


def test_cron_init_makes_folders_the_scan_accepts_whatever_the_umask(tmp_path: Path) -> None:
    from rtool.cron import manage
    from rtool.cron.jobs import scan

    old = os.umask(0o002)  # a cluster's shared-group umask
    try:
        manage.init(tmp_path / "cron")
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "cron").iterdir()}
    assert set(modes.values()) == {0o755} and (tmp_path / "cron").stat().st_mode & 0o777 == 0o755
    _job(tmp_path / "cron" / "cron.hourly", "a.sh", "#!/bin/sh\necho a\n")
    found = scan(tmp_path / "cron")
    assert [j.name for j in found.jobs] == ["cron.hourly/a.sh"] and found.warnings == []
