"""checkpoint watchdog on the real layouts of the real frameworks (CPU, tiny models): the
Hugging Face Trainer's `checkpoint-N/` (complete when its trainer_state.json is there, which
the Trainer writes last) and Lightning's `epoch=E-step=N.ckpt` files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rtool.core.alert import Status
from rtool.core.state import StateDir
from tests.watchdogs.ckptfiles import shift, sweep

SCRIPT = str(Path(__file__).with_name("ckpt_frameworks.py"))


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("frameworks")
    res = subprocess.run(
        [sys.executable, SCRIPT, str(out)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stdout + res.stderr
    shift(out, 600)  # saved ten minutes ago (settled), 2 steps apart
    return out


def test_hugging_face_checkpoint_folders(saved: Path, tmp_path: Path) -> None:
    hf, state = saved / "hf", StateDir(tmp_path / "s")
    assert sorted(p.name for p in hf.iterdir()) == ["checkpoint-2", "checkpoint-4", "checkpoint-6"]
    r = sweep(state, path=str(hf), max_age="1h")
    assert r.status is Status.OK, r.summary
    assert r.fields["newest"] == "checkpoint-6" and "a save every 2 steps" in r.summary
    (hf / "checkpoint-6" / "trainer_state.json").unlink()  # killed before the Trainer's last write
    r = sweep(state, path=str(hf), max_age="1h", settle="0s")
    assert r.status is Status.CRITICAL
    assert "checkpoint-6 incomplete: missing trainer_state.json; newest complete checkpoint-4" in (
        r.summary
    )
    r = sweep(state, path=str(hf), max_age="1h", settle="0s", keep_last=1)
    assert r.actions and r.actions[0].names == ("checkpoint-2",)  # not 4: 6 is incomplete


def test_lightning_checkpoint_files(saved: Path, tmp_path: Path) -> None:
    pl, state = saved / "pl", StateDir(tmp_path / "s")
    names = sorted(p.name for p in pl.iterdir())
    assert names == ["epoch=0-step=2.ckpt", "epoch=0-step=4.ckpt", "epoch=0-step=6.ckpt"]
    r = sweep(state, path=str(pl), max_age="1h")
    assert r.status is Status.OK and r.fields["newest"] == "epoch=0-step=6.ckpt", r.summary
    newest = pl / "epoch=0-step=6.ckpt"
    with open(newest, "r+b") as fh:  # a save cut short: a tenth of its bytes
        fh.truncate(newest.stat().st_size // 10)
    r = sweep(state, path=str(pl), max_age="1h", settle="0s")
    assert r.status is Status.CRITICAL
    assert "epoch=0-step=6.ckpt too small: " in r.summary and "10% of epoch=0-step=4.ckpt" in (
        r.summary
    )
