"""rtool.shim for PyTorch Lightning (needs `pip install lightning` or `pytorch_lightning`).

    from rtool.shim.integrations.lightning import RtoolCallback

    ckpt = "checkpoints/rtool-last.ckpt"
    trainer = L.Trainer(callbacks=[RtoolCallback(ckpt)],
                        plugins=[SLURMEnvironment(auto_requeue=False)])
    trainer.fit(model, ckpt_path=ckpt if os.path.exists(ckpt) else None)

The guard saves with `trainer.save_checkpoint(ckpt_path)` (called on every rank, as Lightning
requires) and stops with `trainer.should_stop`. Lightning's own SLURM auto-requeue also takes
SIGUSR1: turn it off (`SLURMEnvironment(auto_requeue=False)`) so the shim gets the signal. When
training ends on a stop, `fit()` does not return: the process exits with the guard's exit code
(0, or 85 to requeue); `exit=False` leaves that to you (see `.stopped`). A complete run calls
`guard.finished()`. With `check_loss=True` the step's `loss` goes through `guard.check_loss`
(float(loss) waits for the GPU at every step, hence off by default).
"""

from __future__ import annotations

import os
from typing import Any

from rtool.shim import Decision, Guard

try:
    from lightning.pytorch.callbacks import Callback
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "rtool.shim.integrations.lightning needs lightning (pip install 'rtool[lightning]')"
    ) from exc


class RtoolCallback(Callback):  # type: ignore[misc]
    """Drives a Guard that saves to `ckpt_path` through the running Trainer."""

    def __init__(
        self,
        ckpt_path: str | os.PathLike[str],
        *,
        exit: bool = True,
        check_loss: bool = False,
        **options: Any,
    ) -> None:
        self.ckpt_path = os.fspath(ckpt_path)
        self.exit = exit
        self.check_loss = check_loss
        self._trainer: Any = None
        self.guard = Guard.from_env(save=self._save, exit=False, **options)

    @property
    def stopped(self) -> Decision | None:
        return self.guard.stopping

    def _save(self, step: int) -> None:
        self._trainer.save_checkpoint(self.ckpt_path)

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        self._trainer = trainer
        self.guard.exit_if_killed()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.check_loss:  # float(loss) waits for the GPU: opt-in
            loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
            if loss is not None:
                self.guard.check_loss(loss)
        if self.guard.step(trainer.global_step).stopping:
            trainer.should_stop = True

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        d = self.guard.stopping
        if d is None:
            self.guard.finished(trainer.global_step)
            return
        self.guard.close()
        if self.exit:
            raise SystemExit(d.exit_code or 0)
