"""What the Hugging Face and Lightning callbacks share: the guard they build from the
environment, its outcome (`stopped`, `exit_code`), the step's summed loss and the end of
training. Imports neither framework (torch only when a loss is summed)."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtool.shim import Decision, Guard

#: Non-finite steps in a row before the stop (the frameworks have no step to skip them).
DEFAULT_MAX_NONFINITE = 3


def guard_from_env(save: Callable[[int], object] | None, options: dict[str, Any]) -> Guard:
    """`Guard.from_env(save=save, exit=False, **options)`, stopping after
    DEFAULT_MAX_NONFINITE non-finite steps unless RTOOL_MAX_NONFINITE or an option says."""
    if "RTOOL_MAX_NONFINITE" not in os.environ:
        options.setdefault("max_nonfinite", DEFAULT_MAX_NONFINITE)
    return Guard.from_env(save=save, exit=False, **options)


def summed_loss(losses: list[Any]) -> float:
    """The step's loss: the sum of its micro-batches' (detached) loss tensors."""
    import torch

    return float(torch.stack([x.float().sum() for x in losses]).sum())


def torch_file_loads(path: Path) -> None:
    """Raise when a torch checkpoint file is cut short: torch.save writes a zip archive, whose
    directory is at its end (read without loading the tensors)."""
    with zipfile.ZipFile(path) as z:
        z.infolist()


class GuardCallback:
    """The part of a framework callback that reports the guard's outcome."""

    guard: Guard
    update_skipped: bool
    _losses: list[Any]  # the step's (detached) loss tensors, checked before the optimizer step

    @property
    def stopped(self) -> Decision | None:
        """The guard's stop decision (reason, exit_code), or None."""
        return self.guard.stopping

    @property
    def exit_code(self) -> int:
        """`sys.exit(cb.exit_code)` after training: 0, 85 to requeue, 86 (non-finite) ..."""
        return self.guard.exit_code

    def _check_update(self, optimizer: Any, skip: bool = False) -> None:
        """The step's losses checked: a non-finite sum (or `skip`) drops the step's update."""
        losses, self._losses = self._losses, []
        finite = not losses or self.guard.check_loss(summed_loss(losses))
        self.update_skipped = skip or not finite
        if self.update_skipped and optimizer is not None:
            optimizer.zero_grad(set_to_none=True)  # the step's update is dropped

    def _training_ended(self, global_step: int) -> None:
        """A run that was not stopped is finished (done marker); a stopped one just closes."""
        if self.guard.stopping is None:
            self.guard.finished(global_step)
        else:
            self.guard.close()
