"""rtool.shim for the Hugging Face `transformers` Trainer (the `[hf]` extra: transformers 4.45+).

    from rtool.shim.integrations.hf import RtoolCallback, last_checkpoint

    rtool_cb = RtoolCallback()                       # Guard.from_env(save=None, exit=False)
    trainer = Trainer(model, args, ..., callbacks=[rtool_cb])
    trainer.train(resume_from_checkpoint=last_checkpoint(args.output_dir))
    sys.exit(rtool_cb.exit_code)                     # 0, 85 (requeue), 86 (non-finite) ...

The Trainer saves (its own `checkpoint-N`): the callback sets `control.should_save` and
`should_training_stop`, so `train()` returns normally. A non-finite loss (the model output's
`loss`; a custom `compute_loss` calls `rtool_cb.check_loss(x)`) drops its step's update; after
`max_nonfinite` (3 here) in a row the run stops unsaved. Each event: docs/shim.md (Frameworks);
`last_checkpoint` skips (and sets aside) a half-written checkpoint-N (docs/guide/resume.md).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from rtool.shim import Guard, latest_checkpoint
from rtool.shim.integrations import common
from rtool.shim.integrations.common import DEFAULT_MAX_NONFINITE, GuardCallback

try:
    import torch  # noqa: F401  (common.summed_loss needs it: fail here, with the hint)
    from torch.utils.data import IterableDataset
    from transformers import TrainerCallback
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "rtool.shim.integrations.hf needs transformers (pip install 'transformers>=4.45' "
        "accelerate)"
    ) from exc

__all__ = ["DEFAULT_MAX_NONFINITE", "RtoolCallback", "last_checkpoint"]


def last_checkpoint(output_dir: str | os.PathLike[str]) -> str | None:
    """The newest checkpoint-N of `output_dir` that was completely written and loads (None:
    none); newer half-written ones are set aside (rtool.shim.latest_checkpoint)."""
    found = latest_checkpoint(output_dir, pattern="checkpoint-*", load=_loads)
    return os.fspath(found) if found is not None else None


def _loads(folder: Path) -> None:
    """Raise when the checkpoint's trainer state or a weights file is cut short (headers and
    zip directories only: no tensor is read)."""
    json.loads((folder / "trainer_state.json").read_text())
    for f in sorted(folder.iterdir()):
        if f.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(f), framework="pt"):
                pass
        elif f.suffix in (".bin", ".pt", ".pth"):
            common.torch_file_loads(f)


class RtoolCallback(GuardCallback, TrainerCallback):  # type: ignore[misc]
    """Drives a Guard (default: `Guard.from_env(save=None, exit=False)`) from Trainer events."""

    def __init__(self, guard: Guard | None = None, **options: Any) -> None:
        self.guard = guard if guard is not None else common.guard_from_env(None, options)
        self.update_skipped = False  # the last optimizer step was dropped (non-finite, killed)
        self._losses: list[Any] = []
        self._hook: Any = None
        self._killed_at_start = self._complete_at_start = False
        self._no_batches: Any = None  # undoes the empty dataloader of a run that runs no step
        self._t0 = time.monotonic()

    def check_loss(self, loss: Any) -> None:
        """Add a loss of this step by hand (a custom compute_loss with no `loss` output)."""
        self._losses.append(loss.detach() if hasattr(loss, "detach") else loss)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        model = kwargs.get("model")
        if model is not None and self._hook is None:
            self._hook = model.register_forward_hook(self._on_forward)
        complete = 0 < state.max_steps <= state.global_step
        if complete or self.guard.stop_if_killed():
            self._killed_at_start = not complete
            self._complete_at_start = complete
            control.should_training_stop = True
            self._no_batches = _without_batches(kwargs.get("train_dataloader"))
        return control

    def _on_forward(self, module: Any, args: Any, output: Any) -> None:
        if not module.training:
            return
        loss = output.get("loss") if isinstance(output, dict) else getattr(output, "loss", None)
        if loss is not None and hasattr(loss, "detach"):
            self._losses.append(loss.detach())

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        self._check_update(kwargs.get("optimizer"), skip=self._killed_at_start)
        return control

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        self._t0 = time.monotonic()
        if self._killed_at_start or self._complete_at_start:
            return self._no_save(control)
        d = self.guard.step(state.global_step)
        if d.stopping:
            control.should_training_stop = True
            if not d.save_requested:
                return self._no_save(control)  # non-finite: not even the Trainer's own save
        if d.save_requested:
            control.should_save = True
        if control.should_save:  # the Trainer saves after the step's logging: no hang then
            self.guard.save_started()
        return control

    def on_prediction_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.guard.alive()  # an evaluation batch: progress, not a hang

    on_step_begin = on_prediction_step  # a step begins: any save before it is over

    def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._t0 = time.monotonic()  # a save's time starts after the step's logging

    on_evaluate = on_log  # ... and after its evaluation

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.guard.mark_saved(state.global_step, time.monotonic() - self._t0)

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.guard.stopping is not None:
            return self._no_save(control)  # the stop saved at its step (or must not save)
        return control

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        if self._no_batches is not None:
            undo, self._no_batches = self._no_batches, None
            undo()
        if self._complete_at_start:
            self.guard.finished(state.global_step)  # resumed at the end: finished, no step run
            return
        self._training_ended(state.global_step)

    @staticmethod
    def _no_save(control: Any) -> Any:
        control.should_save = False
        control.should_evaluate = False
        return control


def _without_batches(loader: Any) -> Any:
    """Make the Trainer's dataloader yield nothing for this `train()` call (undone in
    `on_train_end`): the epoch loop then runs no step at all, where stopping from a callback
    lets one batch through. Accelerate's loader (what the Trainer uses) iterates its
    `base_dataloader`, which is swapped for an empty one; another loader's class is swapped.
    Returns the undo, or None (then one batch is computed and its update dropped)."""
    if loader is None:
        return None
    inner = vars(loader).get("base_dataloader")
    if inner is not None:
        loader.base_dataloader = _NoBatches(inner)
        return lambda: setattr(loader, "base_dataloader", inner)
    cls = loader.__class__
    empty = type(f"RtoolStopped{cls.__name__}", (cls,), {"__iter__": lambda self: iter(())})
    try:
        loader.__class__ = empty
    except (TypeError, AttributeError):
        return None
    return lambda: setattr(loader, "__class__", cls)


class _NoBatches:
    """A dataloader that yields no batch (everything else is the real one's). A Trainer that
    resumes inside an epoch builds a new loader from this one's batch sampler (or, for an
    iterable dataset, its dataset): both are empty too."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.batch_sampler: Any = [] if getattr(real, "batch_sampler", None) is not None else None
        self.dataset = real.dataset
        if isinstance(real.dataset, IterableDataset):
            self.dataset = _NoItems()

    def __iter__(self) -> Any:
        return iter(())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _NoItems(IterableDataset):  # type: ignore[misc,type-arg]
    def __iter__(self) -> Any:
        return iter(())
