"""checkpoint watchdog: will the folder hold the next save? A real writer filling a real
tmpfs, inodes on a tmpfs with few of them, a quota from a site script."""

from __future__ import annotations

import os
from pathlib import Path

from rtool.core.alert import Status
from rtool.core.state import StateDir
from tests.watchdogs.ckptfiles import folder_ckpt, start_writer, sweep

MIB = 1024 * 1024


def test_a_folder_that_fills(tmpfs, tmp_path: Path, cli) -> None:
    """Saves of 1.5 MiB (model) + 0.75 MiB (optimizer) into a 10 MiB tmpfs: after 3 saves
    there is room for one more (WARNING), after 4 for none (CRITICAL), and the 5th fails."""
    fs = tmpfs("ckpt", size="10M", inodes=200)
    env = {"CKW_DIR": str(fs), "CKW_SIZE": str(3 * MIB // 2), "CKW_STEP_SECONDS": "0.01"}
    env["RTOOL_HEARTBEAT"] = str(tmp_path / "hb.json")
    writer = start_writer(tmp_path, **env, CKW_STEPS="15")
    assert writer.wait(timeout=60) == 0, writer.stdout and writer.stdout.read()
    state = StateDir(tmp_path / "s")
    r = sweep(state, path=str(fs), settle="0s", max_age="1h")
    assert r.status is Status.WARNING, r.summary
    assert r.summary.endswith("free: room for 1 more save(s) of ~2.2MiB")
    writer = start_writer(tmp_path, **env, CKW_STEPS="25")
    assert writer.wait(timeout=60) == 0
    out = writer.stdout.read() if writer.stdout else ""
    assert "save of step 25 failed: [Errno 28] No space left on device" in out, out
    res = cli("watch", "checkpoint", str(fs), "--settle", "0s", "--max-age", "1h", "--no-notify")
    assert res.code == 2
    assert "step_000025 incomplete: missing optimizer.bin" not in res.out  # default: no files
    assert "free, the next save needs ~2.2MiB (step_000020)" in res.out, res.out
    res = cli("watch", "checkpoint", str(fs), "--settle", "0s", "--marker", "{NAME}/COMPLETE")
    assert res.code == 2 and "step_000025 incomplete: missing step_000025/COMPLETE" in res.out


def test_too_few_inodes_for_the_next_save(tmpfs, tmp_path: Path) -> None:
    fs = tmpfs("few", size="10M", inodes=40)
    names = tuple(f"shard{i}.bin" for i in range(8))
    folder_ckpt(fs, "step_1", size=100, files=names, old=600)
    folder_ckpt(fs, "step_2", size=100, files=names, old=100)
    state = StateDir(tmp_path / "s")
    assert sweep(state, path=str(fs)).status is Status.OK
    for i in range(16):
        (fs / f"junk{i}").touch()
    left = os.statvfs(fs).f_favail
    assert left < 9
    r = sweep(state, path=str(fs))
    assert r.status is Status.CRITICAL
    assert f"{left} inodes free, a save writes 9 files" in r.summary


def test_quota_too_small_for_the_next_save(tmp_path: Path) -> None:
    ck, state = tmp_path / "ckpt", StateDir(tmp_path / "s")
    folder_ckpt(ck, "step_000100", size=MIB, old=900)
    folder_ckpt(ck, "step_000200", size=MIB, old=300)  # 2 MiB each
    script = tmp_path / "myquota"
    script.write_text("#!/bin/sh\necho used=99MiB limit=100MiB files=10 files_limit=1000\n")
    script.chmod(0o755)
    r = sweep(state, path=str(ck), quota_cmd=str(script))
    assert r.status is Status.CRITICAL
    assert "quota: 1.0MiB free, the next save needs ~2.0MiB (step_000200)" in r.summary
    script.write_text("#!/bin/sh\necho used=95MiB limit=100MiB\n")
    assert sweep(state, path=str(ck), quota_cmd=str(script)).status is Status.OK
    r = sweep(state, path=str(ck), quota_cmd=str(script), warn_saves=3)
    assert r.status is Status.WARNING
    assert "quota: 5.0MiB free: room for 2 more save(s) of ~2.0MiB" in r.summary
    script.write_text("#!/bin/sh\necho nonsense\nexit 1\n")
    r = sweep(state, path=str(ck), quota_cmd=str(script))
    assert r.status is Status.UNKNOWN and "quota: quota command exited 1" in r.summary


def test_a_trail_of_empty_saves_behind_the_last_good_one(tmpfs, tmp_path: Path) -> None:
    """A training that keeps saving into a full disk leaves empty checkpoints; the size of the
    next save is still known: looked up behind them, or remembered from an earlier sweep."""
    fs = tmpfs("trail", size="10M", inodes=1000)
    for step in (1, 2, 3):
        folder_ckpt(fs, f"step_{step:03d}", size=3 * MIB // 2, old=3000 - step * 100)
    state = StateDir(tmp_path / "s")
    r = sweep(state, path=str(fs), max_age="1d")
    assert r.summary == f"{fs}: 1.0MiB free, the next save needs ~3.0MiB (step_003)"
    for step in range(4, 24):
        folder_ckpt(fs, f"step_{step:03d}", 0, files=("model.bin",), marker=None, old=2000 - step)
    r = sweep(StateDir(tmp_path / "fresh"), path=str(fs), max_age="1d")
    assert r.status is Status.CRITICAL
    assert r.summary.startswith(f"{fs}: step_023 incomplete: empty; newest complete step_003")
    assert "free, the next save needs ~3.0MiB (step_003)" in r.summary
    for step in range(24, 104):  # more than the probe looks into
        folder_ckpt(fs, f"step_{step:03d}", 0, files=("model.bin",), marker=None, old=1500 - step)
    r = sweep(StateDir(tmp_path / "fresh2"), path=str(fs), max_age="1d")
    assert "step_103 incomplete: empty; no complete checkpoint" in r.summary
    assert "the next save needs" not in r.summary  # nothing known about its size
    r = sweep(state, path=str(fs), max_age="1d")  # the sweep that saw step_003 remembers it
    assert "step_103 incomplete: empty; newest complete step_003" in r.summary
    assert "free, the next save needs ~3.0MiB (step_003)" in r.summary
