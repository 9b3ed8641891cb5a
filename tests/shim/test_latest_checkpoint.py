"""rtool.shim.latest_checkpoint: the newest complete checkpoint by the checkpoint watchdog's
rules; the incomplete and unloadable ones newer than it are set aside (renamed, never deleted)
and named in the heartbeat."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from rtool.core import ckptscan
from rtool.core.heartbeat import read_heartbeat
from rtool.shim import Guard, latest_checkpoint
from rtool.shim.checkpoints import find, last_resume
from tests.helpers import wait_for
from tests.shim.conftest import run_toy, start_toy, steps_run

MARKER = "{NAME}/COMPLETE"


def _save(folder: Path, step: int, *, complete: bool = True, size: int = 1000) -> Path:
    ckpt = folder / f"step_{step:06d}"
    ckpt.mkdir(parents=True)
    (ckpt / "state.json").write_text(json.dumps({"step": step, "pad": "x" * size}))
    if complete:
        (ckpt / "COMPLETE").write_text("")
    return ckpt


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_the_newest_complete_one_is_returned_and_the_half_written_one_set_aside(
    tmp_path: Path,
) -> None:
    for step in (100, 200):
        _save(tmp_path, step)
    _save(tmp_path, 300, complete=False)
    got = latest_checkpoint(tmp_path, marker=MARKER)
    assert got == tmp_path / "step_000200"
    names = _names(tmp_path)
    moved = [n for n in names if n.startswith("step_000300.set-aside-")]
    assert len(moved) == 1 and moved[0].endswith(".incomplete"), names
    assert "step_000300" not in names
    assert (tmp_path / moved[0] / "state.json").exists()  # moved, never deleted
    resume = last_resume()
    assert resume is not None
    fields = resume.heartbeat_fields()
    assert fields["resumed_from"] == "step_000200"
    assert fields["set_aside"] == (
        f"step_000300 (incomplete: missing step_000300/COMPLETE) -> {moved[0]}"
    )
    # the watchdog's scan no longer lists it; the next launch sets nothing aside
    listed = [e["name"] for e in ckptscan.scan({"path": str(tmp_path)})["entries"]]
    assert listed == ["step_000100", "step_000200"]
    assert latest_checkpoint(tmp_path, marker=MARKER) == tmp_path / "step_000200"
    assert last_resume() is not None and last_resume().set_aside == ()  # type: ignore[union-attr]


def test_a_checkpoint_that_fails_to_load_is_set_aside_and_the_one_before_used(
    tmp_path: Path,
) -> None:
    for step in (100, 200, 300):
        _save(tmp_path, step)
    state = tmp_path / "step_000300" / "state.json"
    state.write_text(state.read_text()[:-2])  # truncated: the same size, does not load

    def load(path: Path) -> object:
        return json.loads((path / "state.json").read_text())

    assert latest_checkpoint(tmp_path, marker=MARKER, load=load) == tmp_path / "step_000200"
    resume = last_resume()
    assert resume is not None and [s.name for s in resume.set_aside] == ["step_000300"]
    assert resume.set_aside[0].why.startswith("failed to load: JSONDecodeError: ")


def test_older_checkpoints_are_looked_into_when_the_newest_do_not_load(tmp_path: Path) -> None:
    for step in range(1, 11):
        _save(tmp_path, step * 10)
    bad = {f"step_{s * 10:06d}" for s in range(4, 11)}

    def load(path: Path) -> None:
        if path.name in bad:
            raise RuntimeError("torch.load: unexpected EOF\nmore lines")

    got = latest_checkpoint(tmp_path, marker=MARKER, load=load)
    assert got == tmp_path / "step_000030"
    resume = last_resume()
    assert resume is not None and len(resume.set_aside) == 7
    assert resume.set_aside[0].why == "failed to load: RuntimeError: torch.load: unexpected EOF"


def test_a_small_checkpoint_is_incomplete_by_the_watchdogs_min_size(tmp_path: Path) -> None:
    _save(tmp_path, 100, size=100000)
    _save(tmp_path, 200, size=10)
    resume = find(tmp_path, None, (), MARKER, 50.0, 0.0, None, False)
    assert resume.path == tmp_path / "step_000100"
    assert resume.set_aside[0].why.startswith("too small: ")
    assert resume.set_aside[0].moved_to is None  # move_aside=False: left in place
    assert "step_000200" in _names(tmp_path)


def test_other_ranks_skip_but_never_move(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _save(tmp_path, 100)
    _save(tmp_path, 200, complete=False)
    monkeypatch.setenv("RANK", "3")
    assert latest_checkpoint(tmp_path, marker=MARKER) == tmp_path / "step_000100"
    assert "step_000200" in _names(tmp_path)


def test_hugging_face_folders_need_trainer_state_json(tmp_path: Path) -> None:
    for step in (10, 20):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "model.safetensors").write_bytes(b"w" * 100)
    (tmp_path / "checkpoint-10" / "trainer_state.json").write_text("{}")
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-10"


def test_no_folder_or_no_checkpoint_is_none(tmp_path: Path) -> None:
    assert latest_checkpoint(tmp_path / "absent") is None
    _save(tmp_path, 100, complete=False)
    assert latest_checkpoint(tmp_path, marker=MARKER) is None
    resume = last_resume()
    assert resume is not None and resume.heartbeat_fields()["resumed_from"] is None


def test_the_heartbeat_names_both(tmp_path: Path, make_guard: Callable[..., Guard]) -> None:
    folder = tmp_path / "ckpt"
    _save(folder, 100)
    _save(folder, 200, complete=False)
    latest_checkpoint(folder, marker=MARKER)
    hb_path = tmp_path / "hb.json"
    guard = make_guard(heartbeat=str(hb_path))
    guard.step(101)
    guard.close()
    hb = read_heartbeat(hb_path)
    assert hb is not None and hb.resumed_from == "step_000100"
    assert hb.checkpoint_folder == str(folder)  # where a failed load's cause looks (runs)
    assert hb.set_aside is not None
    assert hb.set_aside.startswith("step_000200 (incomplete: missing step_000200/COMPLETE) -> ")


def test_another_users_checkpoint_is_never_chosen(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.fail("this test needs root (to make a file another user owns)")
    _save(tmp_path, 100)
    theirs = _save(tmp_path, 200)
    for p in (theirs, *theirs.iterdir()):
        os.chown(p, 4321, 4321)
    assert latest_checkpoint(tmp_path, marker=MARKER) == tmp_path / "step_000100"
    assert "step_000200" in _names(tmp_path)


def _mid_save(top: Path) -> tuple[str, str] | None:
    """(newest complete, half-written) once the toy is in the middle of a save after one."""
    if not top.exists():
        return None
    done = sorted(p.name for p in top.iterdir() if (p / "COMPLETE").exists())
    half = sorted(p.name for p in top.iterdir() if not (p / "COMPLETE").exists())
    return (done[-1], half[-1]) if done and half and half[-1] > done[-1] else None


def test_the_toy_killed_in_a_save_resumes_from_the_save_before(tmp_path: Path) -> None:
    top = tmp_path / "ckpts"
    args = ("--steps", "60", "--step-seconds", "0.02", "--save-every", "10")
    env = {"TOY_CKPT_FOLDERS": str(top), "TOY_SAVE_SECONDS": "3"}
    proc = start_toy(tmp_path, *args, **env)
    try:
        done, half = wait_for(lambda: _mid_save(top), 30, 0.05, "a save under way after one")
    finally:
        proc.kill()  # SIGKILL in the middle of the save: no stop, no save of its own
        proc.communicate(timeout=30)
    code, out = run_toy(
        tmp_path, *args, timeout=120, TOY_CKPT_FOLDERS=str(top), TOY_SAVE_SECONDS="0"
    )
    assert code == 0, out
    assert f"resuming from {done}" in out, out
    assert f"checkpoint {half} set aside: incomplete: missing {half}/COMPLETE" in out, out
    moved = [p for p in top.iterdir() if p.name.startswith(f"{half}.set-aside-")]
    assert len(moved) == 1 and (moved[0] / "state.json").exists()  # kept, not deleted
    ran = steps_run(tmp_path / "steps.log")
    resumed = int(done.split("_")[1]) + 1
    cut = next(i for i in range(1, len(ran)) if ran[i] <= ran[i - 1])  # the second run
    assert ran[:cut] == list(range(cut)) and ran[cut:] == list(range(resumed, 60)), ran
