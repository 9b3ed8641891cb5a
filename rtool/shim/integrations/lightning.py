"""rtool.shim for Lightning (the `[lightning]` extra: `pip install '<checkout>[lightning]'`).

    from rtool.shim.integrations.lightning import RtoolCallback, last_checkpoint

    rtool_cb = RtoolCallback("checkpoints/rtool-step={step}.ckpt")
    trainer = L.Trainer(callbacks=[rtool_cb], plugins=[SLURMEnvironment(auto_requeue=False)])
    trainer.fit(model, ckpt_path=last_checkpoint("checkpoints"))
    sys.exit(rtool_cb.exit_code)                     # 0, 85 (requeue), 86 (non-finite) ...

The guard saves with `trainer.save_checkpoint(ckpt_path)` on every rank at the same step, then
sets `trainer.should_stop` (one stop, ONE checkpoint). rtool owns the signals: Lightning's
SIGTERM handler and SLURM auto-requeue are displaced; the requeue is exit code 85. A non-finite
loss (`check_loss=False`: not read, it costs a GPU sync per step) drops its step's update;
`max_nonfinite` (3 here) in a row stop the run unsaved. A complete run saves its last step, so a
restart runs no step again. Each event: docs/shim.md (Frameworks); `{step}` in `ckpt_path` keeps
one file per save, so a save cut short leaves the one before it (docs/guide/resume.md).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from rtool.shim import latest_checkpoint
from rtool.shim.integrations import common
from rtool.shim.integrations.common import DEFAULT_MAX_NONFINITE, GuardCallback

try:
    import torch  # noqa: F401  (common.summed_loss needs it: fail here, with the hint)
    from lightning.pytorch.callbacks import Callback
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "rtool.shim.integrations.lightning needs lightning (pip install 'lightning>=2.2')"
    ) from exc

__all__ = ["DEFAULT_MAX_NONFINITE", "RtoolCallback", "last_checkpoint"]

log = logging.getLogger("rtool.shim")


def last_checkpoint(folder: str | os.PathLike[str]) -> str | None:
    """The newest complete `*.ckpt` in `folder` that loads (None: none); see the module doc."""
    found = latest_checkpoint(folder, pattern="*.ckpt", load=common.torch_file_loads)
    return os.fspath(found) if found is not None else None


class RtoolCallback(GuardCallback, Callback):  # type: ignore[misc]
    """Drives a Guard that saves to `ckpt_path` through the running Trainer."""

    def __init__(
        self, ckpt_path: str | os.PathLike[str], *, check_loss: bool = True, **options: Any
    ) -> None:
        self.ckpt_path = os.fspath(ckpt_path)
        self.check_loss = check_loss
        self.update_skipped = False
        self._trainer: Any = None
        self._losses: list[Any] = []
        self._started = False  # fit() began training (a complete run resumed at its end: not)
        self.guard = common.guard_from_env(self._save, options)

    def _save(self, step: int) -> None:
        self._trainer.save_checkpoint(self.ckpt_path.replace("{step}", str(step)))

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._trainer = trainer
        env: Any = getattr(trainer.strategy, "cluster_environment", None)
        if getattr(env, "auto_requeue", False):
            env.auto_requeue = False
            log.info("rtool.shim: Lightning's SLURM auto-requeue off: rtool handles the signals")

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._started = True
        # Lightning installed its SIGTERM (and maybe SIGUSR1) handlers just before this hook
        self.guard.reinstall_signal_handlers()
        if self.guard.stop_if_killed():
            trainer.should_stop = True

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
        if self.check_loss:
            self._losses.append(loss.detach())

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        self._check_update(optimizer)

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.guard.stopping is not None:
            return
        d = self.guard.step(trainer.global_step)
        if d.saved or d.stopping:
            self._checkpoints_done(trainer)  # no second checkpoint of this step (or none)
        if d.stopping:
            trainer.should_stop = True

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, idx: int) -> None:
        self.guard.alive()  # a batch begins: a save Lightning made before it is over

    def on_validation_batch_end(self, trainer: Any, pl_module: Any, *args: Any) -> None:
        self.guard.alive()  # an evaluation batch: progress, not a hang

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: Any) -> None:
        self.guard.save_started()  # until the next batch begins (ours are timed in _save)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        step = trainer.global_step
        if self.guard.stopping is None and self.guard.last_saved_step != step:
            t0 = time.monotonic()
            self._save(step)  # complete: the checkpoint a restart resumes from is the end
            self.guard.mark_saved(step, time.monotonic() - t0)
        self._training_ended(step)

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        if self._started:
            return
        step = trainer.global_step  # resumed at the end: nothing trained, the run is finished
        if 0 < (trainer.max_steps or 0) <= step and self.guard.stopping is None:
            self.guard.finished(step)
        else:
            self.guard.close()

    @staticmethod
    def _checkpoints_done(trainer: Any) -> None:
        for cb in getattr(trainer, "checkpoint_callbacks", []):
            if hasattr(cb, "_last_global_step_saved"):
                cb._last_global_step_saved = trainer.global_step
