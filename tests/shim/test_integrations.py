"""The framework adapters, driven in the event order the frameworks document.

transformers and lightning are not installed here: a minimal stand-in module provides the base
class (`TrainerCallback` / `Callback` are plain classes whose hooks do nothing), and the test
plays the trainer's loop. What is checked is the adapters' own logic on real signals and files.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest


class _Base:
    pass


def _stub(monkeypatch: pytest.MonkeyPatch, *names: str, attr: str) -> None:
    for name in names:
        mod = types.ModuleType(name)
        setattr(mod, attr, _Base)
        monkeypatch.setitem(sys.modules, name, mod)


def _fresh(monkeypatch: pytest.MonkeyPatch, module: str) -> Any:
    monkeypatch.delitem(sys.modules, module, raising=False)
    return importlib.import_module(module)


def test_hf_callback_saves_through_the_trainer_and_exits_on_a_signal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _stub(monkeypatch, "transformers", attr="TrainerCallback")
    hf = _fresh(monkeypatch, "rtool.shim.integrations.hf")
    switch = tmp_path / "save-now"
    cb = hf.RtoolCallback(save_switch=str(switch), poll_interval=0.02)
    state = types.SimpleNamespace(global_step=0)
    saves: list[int] = []
    cb.on_train_begin(None, state, None)
    with pytest.raises(SystemExit) as exc:
        for step in range(1, 100_000):  # Trainer._inner_training_loop, one update step each
            state.global_step = step
            control = types.SimpleNamespace(should_save=False, should_training_stop=False)
            cb.on_step_end(None, state, control)
            cb.on_log(None, state, control, logs={"loss": 0.5})
            if control.should_save:
                saves.append(step)
                cb.on_save(None, state, control)
            if step == 3:
                switch.touch()
            if saves and step == saves[0] + 5:
                os.kill(os.getpid(), signal.SIGUSR1)
            if control.should_training_stop:
                break
            time.sleep(0.005)
        cb.on_train_end(None, state, None)
    assert exc.value.code == 0
    assert len(saves) == 2 and saves[1] == saves[0] + 6  # the switch, then the stop step
    assert not switch.exists()  # removed after the Trainer's save (on_save)
    assert cb.stopped.reason == "signal"


def test_lightning_callback_saves_with_save_checkpoint_and_finishes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _stub(monkeypatch, "lightning", "lightning.pytorch", attr="unused")
    _stub(monkeypatch, "lightning.pytorch.callbacks", attr="Callback")
    pl = _fresh(monkeypatch, "rtool.shim.integrations.lightning")
    hb = tmp_path / "hb.json"
    saved: list[tuple[str, int]] = []
    trainer = types.SimpleNamespace(global_step=0, should_stop=False)
    trainer.save_checkpoint = lambda path: saved.append((path, trainer.global_step))
    cb = pl.RtoolCallback(tmp_path / "last.ckpt", heartbeat=str(hb), check_loss=True)
    cb.on_fit_start(trainer, None)
    for step in range(5):
        trainer.global_step = step + 1
        cb.on_train_batch_end(trainer, None, {"loss": 1.0}, None, step)
    cb.on_train_end(trainer, None)  # a complete run: done marker, no exit
    assert Path(f"{hb}.done").exists() and not trainer.should_stop
    # a second run stops on SIGTERM and saves through the trainer
    trainer = types.SimpleNamespace(global_step=5, should_stop=False)
    trainer.save_checkpoint = lambda path: saved.append((path, trainer.global_step))
    cb = pl.RtoolCallback(tmp_path / "last.ckpt", exit=False)
    cb.on_fit_start(trainer, None)
    os.kill(os.getpid(), signal.SIGTERM)
    trainer.global_step = 6
    cb.on_train_batch_end(trainer, None, {"loss": 1.0}, None, 0)
    assert trainer.should_stop and saved == [(str(tmp_path / "last.ckpt"), 6)]
    cb.on_train_end(trainer, None)
    assert cb.stopped.exit_code == 0
