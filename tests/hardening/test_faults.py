"""Items 6-11 and 14 of issue 16 on real files, a real tmpfs and real processes: a full or
read-only state disk, corrupt state files, failing quota commands, future heartbeats, the
bounded outbox, FIFOs/devices/folders/huge files, and command output that is not UTF-8."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from devtools.servers import SlackLikeServer
from rtool.core import proc
from rtool.core.alert import Alert, Status
from rtool.core.safeio import UnsafeFileError, read_bounded, read_json_file
from rtool.core.state import StateDir
from rtool.notify.deliver import flush
from rtool.notify.engine import process
from rtool.notify.outbox import Outbox
from rtool.watchdogs.history import slug
from tests.hardening.conftest import no_traceback
from tests.notify.conftest import config as notify_config
from tests.servers.fixtures import slack_server  # noqa: F401  (fixture)


def _cfg(path: Path, state: Path, extra: str = "") -> Path:
    path.write_text(f'[state]\ndir = "{state}"\n[notify.log]\npath = "-"\n{extra}')
    return path


def _fill(folder: Path) -> None:
    """Write until the filesystem says ENOSPC."""
    chunk = b"x" * 65536
    with open(folder / "filler", "wb") as fh:
        try:
            while True:
                fh.write(chunk)
                fh.flush()
        except OSError:
            pass
    with pytest.raises(OSError):
        (folder / "one-more").write_bytes(chunk * 4)


# -- 6. state folder full or read-only ----------------------------------------------------------


@pytest.mark.parametrize("how", ["full", "read-only"])
def test_state_disk_full_or_read_only_keeps_the_verdict_and_the_alert(
    cli: Any, tmpfs: Any, tmp_path: Path, how: str
) -> None:
    point = tmpfs("scratch", size="4M", inodes=400)
    state = point / "state"
    StateDir(state)
    cfg = _cfg(tmp_path / "rtool.toml", state)
    ok = cli("--config", str(cfg), "watch", "disk", str(point), "--max-used", "80%")
    assert ok.code == 0, ok.err
    _fill(point)  # the watched disk (and the state's) is now full: CRITICAL
    if how == "read-only":
        subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)
    res = cli("--config", str(cfg), "watch", "disk", str(point), "--max-used", "80%")
    no_traceback(res.err)
    assert res.code == 2 and "DISK CRITICAL" in res.out  # the verdict is the disk's
    assert "[rtool CRITICAL]" in res.err and f"key=disk:{point}" in res.err  # alert went out
    why = "No space left on device" if how == "full" else "Read-only file system"
    assert "state dir problem" in res.err and why in res.err  # and the state problem is told


# -- 7. corrupt state, outbox and heartbeat files -----------------------------------------------

CORRUPTIONS = {
    "truncated": b'{"keys": {"disk:/x": {"status": "CRI',
    "binary": bytes(range(256)) * 4,
    "wrong type": b"[1, 2, 3]",
    "wrong inner types": b'{"keys": {"disk:/x": {"failures": "many", "channels": 7}}}',
    "nan": b'{"samples": NaN}',
}


@pytest.mark.parametrize("kind", [*CORRUPTIONS, "folder"])
@pytest.mark.parametrize(
    "rel", ["notify/alerts.json", "notify/channels.json", "watch/stuck-probes.json", "history"]
)
def test_corrupt_state_files_are_moved_aside_and_the_watchdog_goes_on(
    cli: Any, tmp_path: Path, kind: str, rel: str
) -> None:
    state = tmp_path / "state"
    watched = tmp_path / "scratch"
    watched.mkdir()
    if rel == "history":
        rel = f"watch/disk/{slug(str(watched))}.json"
    target = state / rel
    target.parent.mkdir(parents=True)
    if kind == "folder":
        (target / "inside").mkdir(parents=True)
    else:
        target.write_bytes(CORRUPTIONS[kind])
    cfg = _cfg(tmp_path / "rtool.toml", state)
    runs = []
    for _ in range(2):  # and again: never "notify failed" forever
        res = cli("--config", str(cfg), "watch", "disk", str(watched), "--max-used", "0.001%")
        no_traceback(res.err)
        assert res.code == 2 and "DISK CRITICAL" in res.out
        assert "notify failed" not in res.err
        runs.append(res)
    assert "[rtool CRITICAL]" in runs[0].err  # the alert went out
    moved = list(target.parent.glob(target.name + ".corrupt-*"))
    if kind in ("truncated", "binary", "wrong type", "folder"):  # the file itself is unusable
        assert moved and "corrupt" in runs[0].err and "moved aside" in runs[0].err


@pytest.mark.parametrize("kind", [*CORRUPTIONS, "folder", "fifo"])
def test_corrupt_outbox_items_are_moved_aside(
    tmp_path: Path,
    slack_server: SlackLikeServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
) -> None:
    state = StateDir(tmp_path / "state")
    box = Outbox(state)
    bad = box.dir / "0000-bad.webhook.json"
    if kind == "folder":
        bad.mkdir()
    elif kind == "fifo":
        os.mkfifo(bad)
    else:
        bad.write_bytes(CORRUPTIONS[kind])
    monkeypatch.setenv("RTOOL_TEST_HOOK", slack_server.hook_url)
    cfg = notify_config(webhook={"url_env": "RTOOL_TEST_HOOK", "statuses": ["CRITICAL"]})
    report = process([Alert("disk:/x", Status.CRITICAL, "full")], cfg, state, now=time.time())
    assert report.sent == {"webhook": 1}  # the good alert went out
    assert not bad.exists() and list(box.dir.glob("0000-bad.webhook.json.corrupt-*"))


@pytest.mark.parametrize(
    "content",
    [b'{"state": "running", "time": "yesterday"}', b"\xff\xfe\x00", b"[]", b'{"time": 1'],
)
def test_corrupt_heartbeat_is_reported_not_a_traceback(
    cli: Any, tmp_path: Path, content: bytes
) -> None:
    log = tmp_path / "train.log"
    log.write_text("step\n")
    hb = tmp_path / "hb.json"
    hb.write_bytes(content)
    res = cli("watch", "log", str(log), "--heartbeat", str(hb), "--no-notify")
    no_traceback(res.err)
    assert res.code in (0, 1, 3) and "LOG" in res.out


# -- 8. quota commands that fail, hang or print garbage -----------------------------------------


@pytest.mark.parametrize(
    ("cmd", "needle"),
    [
        ("sh -c 'echo quota server down >&2; exit 1'", "quota server down"),
        ("sleep 30", "timed out"),
        ("sh -c 'head -c 3000 /dev/urandom'", "quota"),
        ("printf 'used=nan limit=10GiB'", "quota"),
        ("printf 'used=１２GiB'", "quota"),
        ("printf 'used=-5 limit=inf'", "quota"),
        ("no-such-quota-tool", "quota"),
    ],
)
def test_quota_failure_is_unknown_never_ok(cli: Any, tmp_path: Path, cmd: str, needle: str) -> None:
    start = time.monotonic()
    # the quota's verdict alone: however full the host's disk under tmp_path is
    res = cli(
        "watch", "disk", str(tmp_path), "--quota-cmd", cmd, "--timeout", "2s", "--no-notify",
        "--max-used", "100%", "--warn-used", "100%",
    )  # fmt: skip
    no_traceback(res.err)
    assert time.monotonic() - start < 20
    assert res.code == 3 and "UNKNOWN" in res.out and needle in res.out, res.out


# -- 9. heartbeat times in the future -----------------------------------------------------------


def test_heartbeat_from_the_future_is_flagged_not_fresh(cli: Any, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step\n")
    old = time.time() - 7200
    os.utime(log, (old, old))
    hb = tmp_path / "hb.json"
    hb.write_text(json.dumps({"state": "running", "time": time.time() + 86400, "step": 5}))
    res = cli("watch", "log", str(log), "--heartbeat", str(hb), "--stale", "30m", "--no-notify")
    no_traceback(res.err)
    assert res.code == 2 and "in the future" in res.out  # the stale log decides: a hang
    os.utime(log)  # a fresh log: still flagged
    res = cli("watch", "log", str(log), "--heartbeat", str(hb), "--stale", "30m", "--no-notify")
    assert res.code == 1 and "in the future" in res.out
    hb.write_text(json.dumps({"state": "running", "time": time.time() + 30, "step": 5}))
    res = cli("watch", "log", str(log), "--heartbeat", str(hb), "--stale", "30m", "--no-notify")
    assert res.code == 0 and "in the future" not in res.out  # small skew is fine


# -- 10. the outbox is bounded per run ----------------------------------------------------------


def test_outbox_delivers_a_bounded_number_per_run_and_status_shows_the_backlog(
    cli: Any,
    tmp_path: Path,
    slack_server: SlackLikeServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RTOOL_TEST_HOOK", slack_server.hook_url)
    state = StateDir(tmp_path / "state")
    hook = {"url_env": "RTOOL_TEST_HOOK", "statuses": ["CRITICAL"]}
    cfg = notify_config(webhook=hook, max_per_run=3)
    alerts = [Alert(f"disk:/d{i}", Status.CRITICAL, "full") for i in range(8)]
    report = process(alerts, cfg, state, now=time.time(), send=False)
    report = flush(cfg, state)
    assert report.sent == {"webhook": 3} and report.queued == {"webhook": 5}
    assert any("max_per_run" in (d.error or "") for d in report.deliveries)
    conf = tmp_path / "rtool.toml"
    conf.write_text(f'[state]\ndir = "{state.path}"\n')
    status = cli("--config", str(conf), "status", "--json")
    assert json.loads(status.out)["outbox"]["queued"] == 5, status.out
    slow = notify_config(webhook=hook, run_deadline="0.001s")
    time.sleep(0.01)
    assert flush(slow, state).sent.get("webhook", 0) <= 1  # the deadline stops the run


# -- 11. FIFOs, devices, folders, huge files, long lines, binary --------------------------------


@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "huge", "long line", "binary"])
def test_config_and_scripts_that_are_not_small_regular_files(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "odd"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        target = Path("/dev/zero")
    elif kind == "folder":
        target.mkdir()
    elif kind == "huge":
        with open(target, "wb") as fh:
            fh.truncate(3 * 1024**3)  # sparse: 3 GiB
    elif kind == "long line":
        target.write_bytes(b"#" + b"x" * (50 * 1024 * 1024))
    else:
        target.write_bytes(bytes(range(256)) * 64)
    start = time.monotonic()
    res = cli("--config", str(target), "config", "check")
    assert res.code == 2
    sub = cli("submit", str(target), "--dry-run")
    assert sub.code in (1, 2)
    assert time.monotonic() - start < 30
    for r in (res, sub):
        no_traceback(r.err)
        assert len(r.err.strip().splitlines()) <= 3, r.err


def test_bounded_reader(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"a" * 2000)
    with pytest.raises(UnsafeFileError, match="too large"):
        read_bounded(big, 1000)
    assert read_bounded(big, 5000) == "a" * 2000
    (tmp_path / "bin").write_bytes(b"\xff\xfeok")
    assert read_bounded(tmp_path / "bin").endswith("ok")
    link = tmp_path / "link.json"
    link.symlink_to(big)
    assert read_json_file(link) is None and not link.exists()  # not followed: moved aside


# -- 14. output that is not UTF-8 -------------------------------------------------------------


def test_command_output_that_is_not_utf8_is_replaced() -> None:
    code = (
        "import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe\\xc3'); "
        "sys.stderr.buffer.write(b'\\x80')"
    )
    res = proc.run([sys.executable, "-c", code], timeout=30)
    assert res.stdout.startswith("ok ") and "\ufffd" in res.stdout and res.stderr == "\ufffd"
