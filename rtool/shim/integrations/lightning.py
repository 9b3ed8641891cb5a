"""rtool.shim for Lightning (the `[lightning]` extra: `pip install '<checkout>[lightning]'`).

    from rtool.shim.integrations.lightning import RtoolCallback

    ckpt = "checkpoints/rtool-last.ckpt"
    rtool_cb = RtoolCallback(ckpt)
    trainer = L.Trainer(callbacks=[rtool_cb], plugins=[SLURMEnvironment(auto_requeue=False)])
    trainer.fit(model, ckpt_path=ckpt if os.path.exists(ckpt) else None)
    sys.exit(rtool_cb.exit_code)                     # 0, 85 (requeue), 86 (non-finite) ...

- The guard saves with `trainer.save_checkpoint(ckpt_path)` (on every rank, at the same step)
  on the save switch (training goes on) and on a stop, then sets `trainer.should_stop`; the
  ModelCheckpoint callbacks are told that step is saved, so one stop writes ONE checkpoint.
  `fit()` returns normally: later callbacks, `on_train_end` and the loggers' `finalize
  ("success")` run as at a normal end.
- Signals: rtool owns them. Lightning's SIGTERM handler (it raises a bare SystemExit at the
  next batch) and its SLURM auto-requeue (SIGUSR1 -> save an hpc checkpoint and `scontrol
  requeue` from inside the job) are displaced: the callback turns `auto_requeue` off on a
  SLURMEnvironment and puts rtool's handlers back once Lightning installed its own. Requeue
  goes through the exit code (85) and the batch script, as without Lightning.
- Non-finite loss: the loss is read in `on_before_backward` and checked before the optimizer
  step; a non-finite step's update is dropped. After `max_nonfinite` (3 here) in a row: stop
  without any checkpoint (ModelCheckpoint's included), the array's pending tasks held.
  `check_loss=False` skips the check (it costs one GPU sync per step).
- Kill switch present at start: `fit()` ends before the first batch, nothing saved.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from rtool.shim.integrations.common import (
    DEFAULT_MAX_NONFINITE,
    GuardCallback,
    guard_from_env,
    summed_loss,
)

try:
    import torch  # noqa: F401  (common.summed_loss needs it: fail here, with the hint)
    from lightning.pytorch.callbacks import Callback
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "rtool.shim.integrations.lightning needs lightning (pip install 'lightning>=2.2')"
    ) from exc

__all__ = ["DEFAULT_MAX_NONFINITE", "RtoolCallback"]

log = logging.getLogger("rtool.shim")


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
        self.guard = guard_from_env(self._save, options)

    def _save(self, step: int) -> None:
        self._trainer.save_checkpoint(self.ckpt_path)

    # -- hooks -------------------------------------------------------------------------------

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._trainer = trainer
        env: Any = getattr(trainer.strategy, "cluster_environment", None)
        if getattr(env, "auto_requeue", False):
            env.auto_requeue = False
            log.info("rtool.shim: Lightning's SLURM auto-requeue off: rtool handles the signals")

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        # Lightning installed its SIGTERM (and maybe SIGUSR1) handlers just before this hook
        self.guard.reinstall_signal_handlers()
        if self.guard.stop_if_killed():
            trainer.should_stop = True

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
        if self.check_loss:
            self._losses.append(loss.detach())

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        losses, self._losses = self._losses, []
        if not losses:
            self.update_skipped = False
            return
        self.update_skipped = not self.guard.check_loss(summed_loss(losses))
        if self.update_skipped:
            optimizer.zero_grad(set_to_none=True)  # the step's update is dropped

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

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._training_ended(trainer.global_step)

    @staticmethod
    def _checkpoints_done(trainer: Any) -> None:
        for cb in getattr(trainer, "checkpoint_callbacks", []):
            if hasattr(cb, "_last_global_step_saved"):
                cb._last_global_step_saved = trainer.global_step
