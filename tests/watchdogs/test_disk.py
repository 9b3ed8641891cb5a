"""disk watchdog on real tmpfs mounts with size and inode limits, and a FUSE mount that hangs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rtool.core.alert import Status
from rtool.core.state import StateDir
from rtool.watchdogs.base import ProbeEnv
from rtool.watchdogs.config import DiskWatch
from rtool.watchdogs.disk import DiskWatchdog
from rtool.watchdogs.probes import child
from rtool.watchdogs.probes.child import STUCK_FILE, mount_of, mount_points
from tests.watchdogs.conftest import fill


def sweep(specs: list[DiskWatch], state: StateDir, timeout: float = 5.0):
    wd = DiskWatchdog(specs, timeout)
    return wd.check(wd.probe(ProbeEnv(None, state)), time.time())


def test_space_threshold_on_a_filling_tmpfs(tmpfs, tmp_path, cli):
    fs = tmpfs("scratch", size="10M")
    r = cli("watch", "disk", str(fs), "--max-used", "80%", "--no-notify")
    assert r.code == 0, r.out
    assert r.out.startswith(f"DISK OK - {fs} 0% used")
    fill(fs, 9 * 1024 * 1024)
    r = cli("watch", "disk", str(fs), "--max-used", "80%", "--no-notify")
    assert r.code == 2
    text, perf = r.out.strip().split(" | ")
    assert text == f"DISK CRITICAL - {fs} 90% used (limit 80%)"
    assert perf.startswith(f"'{fs}'=90%;;80;0;100 '{fs} used'=9437184B;;;0;10485760 ")


def test_an_entry_without_max_used_alerts_like_the_command(tmpfs, tmp_path, cli):
    """A `[[watch.disk]]` entry without `max_used` read DISK OK at 95% while the command line
    defaulted to 90% (issue #30): both now take the one declared default."""
    fs = tmpfs("full", size="10M")
    fill(fs, 95 * 10 * 1024 * 1024 // 100)
    config = tmp_path / "rtool.toml"
    config.write_text(f'[[watch.disk]]\npath = "{fs}"\n')
    from_config = cli("--config", str(config), "watch", "all", "--no-notify")
    from_flags = cli("watch", "disk", str(fs), "--no-notify")
    for res in (from_config, from_flags):
        assert res.code == 2, res.out + res.err
        assert res.out.startswith(f"DISK CRITICAL - {fs} 95% used (limit 90%)"), res.out


def test_usable_share_and_min_free(tmpfs, tmp_path):
    fs = tmpfs("lustre", size="10M")
    fill(fs, 5 * 1024 * 1024)  # 50% of the raw size
    state = StateDir(tmp_path / "state")
    [ok] = sweep([DiskWatch(path=str(fs), max_used="80%")], state)
    assert ok.status == Status.OK
    # 80% is the real 100%: 5 MiB of 8 MiB usable is 62%; over a 60% limit
    [res] = sweep([DiskWatch(path=str(fs), max_used="60%", usable="80%")], state)
    assert res.status == Status.CRITICAL and "62% used (limit 60%)" in res.summary
    [res] = sweep([DiskWatch(path=str(fs), max_used="99%", min_free="6MiB")], state)
    assert res.status == Status.CRITICAL and "free (minimum 6.0MiB)" in res.summary


def test_inode_limits_on_a_small_tmpfs(tmpfs, tmp_path, cli):
    fs = tmpfs("many", size="10M", inodes=200)
    for i in range(185):
        (fs / f"f{i}").touch()
    r = cli("watch", "disk", str(fs), "--max-inodes-used", "90%", "--no-notify")
    assert r.code == 2
    assert "inodes used (limit 90%)" in r.out
    r = cli("watch", "disk", str(fs), "--min-free-inodes", "50", "--no-notify")
    assert r.code == 2 and "inodes free (minimum 50)" in r.out
    r = cli("watch", "disk", str(fs), "--min-free-inodes", "5", "--no-notify")
    assert r.code == 0, r.out


def test_several_paths_each_with_its_status(tmpfs, cli):
    a, b = tmpfs("a"), tmpfs("b")
    fill(b, 9 * 1024 * 1024)
    r = cli("watch", "disk", str(a), str(b), "--max-used", "80%", "--no-notify")
    assert r.code == 2
    lines = r.out.splitlines()
    assert lines[0].startswith(f"DISK OK - {a}") and lines[1].startswith(f"DISK CRITICAL - {b}")


def test_missing_path_is_unknown_not_critical(tmp_path, cli):
    r = cli("watch", "disk", str(tmp_path / "nope"), "--no-notify")
    assert r.code == 3 and "No such file" in r.out


def test_runway_warns_when_the_trend_fills_the_partition(tmpfs, tmp_path):
    fs = tmpfs("grow", size="10M")
    state = StateDir(tmp_path / "state")
    spec = DiskWatch(path=str(fs), max_used="99%", runway="48h", trend_min_span="1s")
    for i in range(3):
        fill(fs, (i + 1) * 2 * 1024 * 1024)
        [res] = sweep([spec], state)
        time.sleep(0.6)
    assert res.status == Status.WARNING
    assert "full in ~0 h at" in res.summary and "/day" in res.summary


def test_quota_command_that_never_returns_is_unknown(tmpfs, tmp_path, cli):
    fs = tmpfs("q")
    start = time.monotonic()
    r = cli("watch", "disk", str(fs), "--quota-cmd", "sleep 600", "--timeout", "1s", "--no-notify")
    assert time.monotonic() - start < 5
    assert r.code == 3
    assert "quota: quota command timed out after 1s" in r.out


def test_quota_over_limit_from_a_site_script(tmpfs, tmp_path, cli):
    fs = tmpfs("q2")
    script = tmp_path / "myquota"
    script.write_text("#!/bin/sh\necho used=950GiB limit=1000GiB files=10 files_limit=1000\n")
    script.chmod(0o755)
    r = cli(
        "watch", "disk", str(fs), "--quota-cmd", str(script), "--max-used", "90%", "--no-notify"
    )
    assert r.code == 2
    assert "quota 95% used (950.0GiB of 1000.0GiB)" in r.out


def test_mount_lookup_never_touches_the_path():
    info = (
        "22 1 0:21 / / rw - ext4 /dev/sda rw\n"
        "30 22 0:40 / /scratch rw - lustre x rw\n"
        "31 22 0:41 / /scratch/my\\040data rw - nfs y rw\n"
    )
    points = mount_points(info)
    assert mount_of("/scratch/run1/ckpt", points) == "/scratch"
    assert mount_of("/scratch/my data/x", points) == "/scratch/my data"
    assert mount_of("/scratchy", points) == "/"


@pytest.fixture
def probe_starts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The argv of every probe child started (the real ones still run)."""
    started: list[tuple[str, ...]] = []
    real = child.start

    def counting(mode: str, *args: str) -> subprocess.Popen[bytes]:
        started.append((mode, *args))
        return real(mode, *args)

    monkeypatch.setattr(child, "start", counting)
    return started


def test_one_probe_process_and_a_hung_mount_delays_no_other_answer(
    hung_mount, tmpfs, tmp_path, probe_starts
):
    fine = [tmpfs(f"fine{i}") for i in range(4)]
    paths = [str(fine[0]), str(fine[1]), str(hung_mount), str(fine[2]), str(fine[3])]
    start = time.monotonic()
    outcomes = child.statvfs_all(paths, [start + 3.0] * len(paths))
    elapsed = time.monotonic() - start
    assert len(probe_starts) == 1 and probe_starts[0] == ("statvfs", *paths)
    hung = outcomes.pop(2)
    assert hung.timed_out and hung.data is None and 3.0 <= elapsed < 5
    assert hung.tid is not None and Path(f"/proc/{hung.pid}/task/{hung.tid}").exists()
    for o in outcomes:  # answered as they came, long before the hung mount's deadline
        assert o.data is not None and not o.timed_out, o
        assert o.answered is not None and o.answered - start < 2.5, o.answered - start


def test_hung_mount_times_out_is_remembered_and_not_reprobed(
    hung_mount, tmpfs, tmp_path, probe_starts
):
    ok = tmpfs("fine")
    state = StateDir(tmp_path / "state")
    specs = [DiskWatch(path=str(hung_mount)), DiskWatch(path=str(ok))]
    start = time.monotonic()
    hung, fine = sweep(specs, state, timeout=1.0)
    assert time.monotonic() - start < 3
    assert hung.status == Status.CRITICAL and "probe timed out after 1s" in hung.summary
    assert fine.status == Status.OK
    [stuck] = state.read_json(STUCK_FILE).values()
    assert stuck["path"] == stuck["mount"] == str(hung_mount)
    pid, tid = stuck["pid"], stuck["tid"]
    assert Path(f"/proc/{pid}/task/{tid}").exists()  # the child's thread stuck in statfs
    # next run: not probed again while that thread still hangs; the other path is
    start = time.monotonic()
    hung, fine = sweep(specs, state, timeout=1.0)
    assert time.monotonic() - start < 0.9
    assert hung.status == Status.CRITICAL and "still hung since" in hung.summary
    assert f"(pid {pid})" in hung.summary and fine.status == Status.OK
    assert probe_starts == [("statvfs", str(hung_mount), str(ok)), ("statvfs", str(ok))]


def test_a_remembered_probe_that_finished_is_forgotten(tmpfs, tmp_path):
    """A stuck entry whose thread is gone (the mount came back) is dropped and probed again."""
    ok = tmpfs("back")
    state = StateDir(tmp_path / "state")
    key, _ = child.StuckProbes(state).key_of(str(ok), child.read_mounts())
    state.write_json(STUCK_FILE, {key: {"pid": os.getpid(), "tid": 2**22 + 7, "start": 1}})
    [res] = sweep([DiskWatch(path=str(ok))], state)
    assert res.status == Status.OK and state.read_json(STUCK_FILE) == {}


def test_rtool_piped_into_cat_returns_on_time_with_a_hung_mount(hung_mount, tmp_path):
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    rtool = Path(sys.executable).with_name("rtool")
    cmd = f"{rtool} watch disk {hung_mount} --timeout 1s --no-notify | cat"
    start = time.monotonic()
    res = subprocess.run(
        ["bash", "-c", cmd],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        cwd=Path(__file__).parents[2],
    )
    elapsed = time.monotonic() - start
    assert elapsed < 6, f"rtool | cat took {elapsed:.1f}s"
    assert "DISK CRITICAL" in res.stdout and "probe timed out after 1s" in res.stdout
    # $(...) capture too
    start = time.monotonic()
    res = subprocess.run(
        ["bash", "-c", f'out=$({cmd.removesuffix(" | cat")}); echo "$out"'],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        cwd=Path(__file__).parents[2],
    )
    assert time.monotonic() - start < 6
    assert "still hung" in res.stdout


def test_a_hung_mount_behind_a_symlink_is_keyed_by_its_real_mount(hung_mount, tmp_path):
    """Issue 35.16: the stuck probe is remembered under the st_dev of the resolved path, so a
    healthy folder on the mount the symlink's name starts with is still probed."""
    link, fine_dir, state = tmp_path / "link", tmp_path / "fine", StateDir(tmp_path / "state")
    link.symlink_to(hung_mount)
    fine_dir.mkdir()
    specs = [DiskWatch(path=str(link)), DiskWatch(path=str(fine_dir))]
    hung, fine = sweep(specs, state, timeout=1.0)
    assert "probe timed out after 1s" in hung.summary and fine.status == Status.OK
    assert f"(mount {hung_mount} hung?)" in hung.summary, hung.summary
    dev = os.stat(hung_mount).st_dev
    assert list(state.read_json(STUCK_FILE)) == [f"dev {os.major(dev)}:{os.minor(dev)}"]
    hung, fine = sweep(specs, state, timeout=1.0)
    assert "still hung since" in hung.summary
    assert fine.status == Status.OK and "hung" not in fine.summary.replace(str(tmp_path), ""), (
        fine.summary
    )
