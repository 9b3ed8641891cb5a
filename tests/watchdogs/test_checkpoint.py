"""checkpoint watchdog: layouts, overdue saves (a real writer that stops saving, judged by its
shim heartbeat), incomplete checkpoints, the config entry, a hung mount. Room for the next save
is in test_checkpoint_room.py, retention in test_checkpoint_retention.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

from rtool.core.alert import Status
from rtool.core.heartbeat import Heartbeat, RunState
from rtool.core.state import StateDir
from tests.helpers import wait_for
from tests.watchdogs.ckptfiles import age, file_ckpt, folder_ckpt, start_writer, sweep


def _hb(path: Path, state: RunState, step: int, step_seconds: float = 1.0) -> None:
    hb = Heartbeat(state=state, time=time.time(), step=step, step_seconds=step_seconds)
    path.write_text(hb.to_json())


def test_step_folders_newest_by_step_not_by_name_or_time(tmp_path: Path) -> None:
    ck = tmp_path / "ckpt"
    folder_ckpt(ck, "step_9000", old=60)
    folder_ckpt(ck, "step_10000", old=3600)  # newest by step, although older on disk
    folder_ckpt(ck, "step_8000", old=30)
    (ck / "heartbeat.json").write_text("{}")  # not a checkpoint
    (ck / "tmp-step_11000").mkdir()  # being written under a scratch name: not one either
    r = sweep(StateDir(tmp_path / "s"), path=str(ck))
    assert r.status is Status.OK, r.summary
    assert r.summary.startswith(f"{ck}: newest step_10000 (")
    assert r.fields["newest"] == "step_10000" and r.fields["checkpoints"] == "3"
    assert "a save every 1000 steps" in r.summary


def test_single_files_and_a_pattern(tmp_path: Path) -> None:
    ck = tmp_path / "ckpt"
    ck.mkdir()
    for i, step in enumerate((100, 200, 300)):
        file_ckpt(ck, f"model_step{step}.pt", old=300 - i * 100)
    file_ckpt(ck, "notes.txt", size=10)
    r = sweep(StateDir(tmp_path / "s"), path=str(ck))
    assert r.status is Status.OK and r.fields["newest"] == "model_step300.pt", r.summary
    # without step numbers: a pattern, ordered by time
    for name, old in (("b.pt", 500), ("a.pt", 100), ("c.pt", 900)):
        file_ckpt(ck, name, old=old)
    r = sweep(StateDir(tmp_path / "s"), path=str(ck), pattern="?.pt")
    assert r.fields["newest"] == "a.pt" and r.fields["checkpoints"] == "3", r.summary


def test_partial_checkpoint_missing_its_marker_or_a_file(tmp_path: Path) -> None:
    ck, state = tmp_path / "ckpt", StateDir(tmp_path / "s")
    folder_ckpt(ck, "step_000100", old=600)
    folder_ckpt(ck, "step_000200", old=300, files=("model.bin",), marker=None)
    r = sweep(state, path=str(ck), marker="{NAME}/COMPLETE")
    assert r.status is Status.CRITICAL
    assert r.summary.startswith(
        f"{ck}: step_000200 incomplete: missing step_000200/COMPLETE; "
        "newest complete step_000100 (10m ago)"
    )
    r = sweep(state, path=str(ck), files=["model.bin", "optimizer.*"])
    assert r.status is Status.CRITICAL
    assert "step_000200 incomplete: missing optimizer.*" in r.summary
    # a complete one after it: the partial one is old garbage, not the newest
    folder_ckpt(ck, "step_000300", old=120)
    r = sweep(state, path=str(ck), files=["model.bin", "optimizer.*"])
    assert r.status is Status.OK and r.fields["newest"] == "step_000300", r.summary


def test_far_smaller_than_the_one_before_is_incomplete(tmp_path: Path) -> None:
    ck, state = tmp_path / "ckpt", StateDir(tmp_path / "s")
    ck.mkdir()
    file_ckpt(ck, "epoch=0-step=100.ckpt", size=100_000, old=600)
    file_ckpt(ck, "epoch=0-step=200.ckpt", size=4_000, old=300)
    r = sweep(state, path=str(ck))
    assert r.status is Status.CRITICAL
    assert "epoch=0-step=200.ckpt too small: 3.9KiB, 4% of epoch=0-step=100.ckpt" in r.summary
    assert sweep(state, path=str(ck), min_size="3%").status is Status.OK


def test_a_checkpoint_still_being_written_is_not_judged_yet(tmp_path: Path) -> None:
    ck, state = tmp_path / "ckpt", StateDir(tmp_path / "s")
    folder_ckpt(ck, "step_000100", old=600)
    folder_ckpt(ck, "step_000200", files=("model.bin",), marker=None)  # growing right now
    r = sweep(state, path=str(ck), marker="{NAME}/COMPLETE", settle="60s")
    assert r.status is Status.OK, r.summary
    assert "newest step_000100" in r.summary and "step_000200 being written" in r.summary
    age(ck / "step_000200", 120)  # it stopped growing, never completed
    r = sweep(state, path=str(ck), marker="{NAME}/COMPLETE", settle="60s")
    assert r.status is Status.CRITICAL and "step_000200 incomplete" in r.summary


def test_a_writer_that_stops_saving_is_overdue_by_its_pace(tmp_path: Path) -> None:
    """A real training (rtool.shim heartbeat, 0.1 s steps, a save every 5 steps) whose saves
    stop at step 30 while it trains on: CRITICAL within a few save intervals, by steps."""
    hb = tmp_path / "ckpt" / "heartbeat.json"
    env = {"CKW_DIR": "ckpt", "CKW_SAVE_EVERY": "5", "CKW_STOP_SAVING_AT": "30"}
    env |= {"CKW_STEPS": "400", "RTOOL_HEARTBEAT": str(hb), "RTOOL_HEARTBEAT_INTERVAL": "0.2s"}
    proc = start_writer(tmp_path, **env)
    state = StateDir(tmp_path / "s")
    spec = {"path": str(tmp_path / "ckpt"), "heartbeat": str(hb), "settle": "0.3s"}
    spec |= {"marker": "{NAME}/COMPLETE", "max_age": "1h"}  # only steps may make it CRITICAL
    try:
        wait_for(lambda: (tmp_path / "ckpt" / "step_000015" / "COMPLETE").exists(), timeout=30)
        r = sweep(state, **spec)
        assert r.status is Status.OK and "a save every 5 steps" in r.summary, r.summary
        late = wait_for(
            lambda: (x := sweep(state, **spec)).status is Status.CRITICAL and x, timeout=30
        )
    finally:
        proc.kill()
        proc.wait()
    assert "newest step_000025" in late.summary and "(a save every 5; " in late.summary
    assert late.summary.startswith(f"{spec['path']}: no complete checkpoint for ")
    assert int(late.fields["training_step"]) > 35


def test_max_age_and_a_stopped_training(tmp_path: Path) -> None:
    ck, state = tmp_path / "ckpt", StateDir(tmp_path / "s")
    folder_ckpt(ck, "step_000100", old=7200)
    folder_ckpt(ck, "step_000200", old=3 * 3600)  # older file, newer step: it counts
    r = sweep(state, path=str(ck), max_age="2h")
    assert r.status is Status.CRITICAL
    assert "newest complete checkpoint step_000200 is 3h old (limit 2h)" in r.summary
    hb = tmp_path / "hb.json"
    for st in (RunState.STOPPED, RunState.FINISHED, RunState.CRASHED):
        _hb(hb, st, 250)
        r = sweep(state, path=str(ck), max_age="2h", heartbeat=str(hb))
        assert r.status is Status.OK and f"training {st.value}: no save expected" in r.summary
    _hb(hb, RunState.RUNNING, 250)
    assert sweep(state, path=str(ck), max_age="2h", heartbeat=str(hb)).status is Status.CRITICAL
    # the pace from the heartbeat: 100 steps of 1 s = a save every 100 s, late after 2 of them
    # and the 60 s a save may take (settle): 260 s
    r = sweep(state, path=str(ck), heartbeat=str(hb))
    assert r.status is Status.CRITICAL and "3h old (limit 4m)" in r.summary, r.summary


def test_no_checkpoint_yet(tmp_path: Path) -> None:
    ck, state, hb = tmp_path / "ckpt", StateDir(tmp_path / "s"), tmp_path / "hb.json"
    ck.mkdir()
    r = sweep(state, path=str(ck))
    assert r.status is Status.OK and "no complete checkpoint yet" in r.summary
    _hb(hb, RunState.RUNNING, 150)
    assert sweep(state, path=str(ck), heartbeat=str(hb), save_every=100).status is Status.OK
    _hb(hb, RunState.RUNNING, 201)
    r = sweep(state, path=str(ck), heartbeat=str(hb), save_every=100)
    assert r.status is Status.CRITICAL
    assert "no complete checkpoint for 201 steps (a save every 100; none yet" in r.summary


def test_a_bad_heartbeat_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    ck, state, hb = tmp_path / "ckpt", StateDir(tmp_path / "s"), tmp_path / "hb.json"
    folder_ckpt(ck, "step_1")
    hb.write_text('{"state": "running"}')
    r = sweep(state, path=str(ck), heartbeat=str(hb))
    assert r.status is Status.WARNING and "heartbeat: no 'time'" in r.summary


def test_command_line_config_entry_and_watch_all_agree(tmp_path: Path, cli) -> None:
    ck = tmp_path / "ckpt"
    folder_ckpt(ck, "step_000100", old=600)
    folder_ckpt(ck, "step_000200", old=300, marker=None)
    config = tmp_path / "rtool.toml"
    config.write_text(f'[[watch.checkpoint]]\npath = "{ck}"\nmarker = "{{NAME}}/COMPLETE"\n')
    flags = cli("watch", "checkpoint", str(ck), "--marker", "{NAME}/COMPLETE", "--no-notify")
    entry = cli("--config", str(config), "watch", "all", "--no-notify")
    for res in (flags, entry):
        assert res.code == 2, res.out + res.err
        assert res.out.startswith(f"CHECKPOINT CRITICAL - {ck}: step_000200 incomplete")
    doc = json.loads(cli("watch", "checkpoint", str(ck), "--json", "--no-notify").out)
    assert doc["results"][0]["key"] == f"checkpoint:{ck}"


def test_bad_options_and_entries_are_one_line_exit_3(tmp_path: Path, cli) -> None:
    config = tmp_path / "rtool.toml"
    config.write_text('[[watch.checkpoint]]\npath = "x"\nkeep_every = 10\n')
    res = cli("--config", str(config), "watch", "all", "--no-notify")
    assert res.code == 3 and "keep_every needs keep_last" in res.err
    assert "Traceback" not in res.err
    for bad in (["--late", "0.5"], ["--pattern", "a/b"], ["--marker", "../x"], ["--file", "/x"]):
        res = cli("watch", "checkpoint", str(tmp_path), *bad, "--no-notify")
        assert res.code == 3 and "Traceback" not in res.err, (bad, res.err)
    res = cli("watch", "checkpoint", str(tmp_path / "missing"), "--no-notify")
    assert res.code == 3 and "No such file" in res.out


def test_a_hung_mount_never_hangs_it(hung_mount: Path, tmp_path: Path, cli) -> None:
    start = time.monotonic()
    res = cli("watch", "checkpoint", str(hung_mount), "--timeout", "1s", "--no-notify")
    assert time.monotonic() - start < 8
    assert res.code == 2 and "probe timed out after 1s" in res.out, res.out
    res = cli("watch", "checkpoint", str(hung_mount), "--timeout", "1s", "--no-notify")
    assert res.code == 2 and "probe still hung since" in res.out, res.out
    res = cli("watch", "checkpoint", str(hung_mount), "--on-timeout", "unknown", "--no-notify")
    assert res.code == 3


def test_a_done_marker_beside_the_checkpoint_is_not_a_checkpoint(tmp_path: Path) -> None:
    """Issue 35.15: `{NAME}.done` names a step number too, but it is the marker, not a save."""
    ck, state = tmp_path / "ckpt", StateDir(tmp_path / "s")
    for step, old in ((300, 900), (400, 300)):
        folder_ckpt(ck, f"step_000{step}", old=old, marker=None)
        file_ckpt(ck, f"step_000{step}.done", size=0, old=old)
    r = sweep(state, path=str(ck), marker="{NAME}.done")
    assert r.status is Status.OK, r.summary
    assert r.fields["newest"] == "step_000400"
    assert ".done.done" not in r.summary
    # the newest without its marker is still incomplete, by the marker's name
    folder_ckpt(ck, "step_000500", old=200, marker=None)
    r = sweep(state, path=str(ck), marker="{NAME}.done")
    assert r.status is Status.CRITICAL
    assert r.summary.startswith(
        f"{ck}: step_000500 incomplete: missing step_000500.done; newest complete step_000400"
    ), r.summary


def test_a_hung_mount_behind_a_symlink_holds_up_no_healthy_folder(
    hung_mount: Path, tmp_path: Path
) -> None:
    """Issue 35.16: the stuck probe is remembered under the mount the symlink leads to (its
    st_dev), not under the mount its name starts with, which also holds a healthy folder."""
    from rtool.watchdogs.base import ProbeEnv
    from rtool.watchdogs.checkpoint.watchdog import CheckpointWatchdog
    from rtool.watchdogs.config import CheckpointWatch

    link, healthy, state = tmp_path / "ckpt-link", tmp_path / "healthy", StateDir(tmp_path / "s")
    link.symlink_to(hung_mount)
    folder_ckpt(healthy, "step_000100", old=300)
    wd = CheckpointWatchdog([CheckpointWatch(path=str(p)) for p in (link, healthy)], 1.0)
    for sweep_no, hung_text in ((1, "probe timed out after 1s"), (2, "probe still hung since")):
        bad, good = wd.check(wd.probe(ProbeEnv(None, state)), time.time())
        assert bad.status is Status.CRITICAL and hung_text in bad.summary, (sweep_no, bad.summary)
        assert str(hung_mount) in str(bad.fields.get("mount")), bad.fields
        assert good.status is Status.OK, (sweep_no, good.summary)
        assert "probe" not in good.summary and good.fields["newest"] == "step_000100"
