"""rtool.shim for the Hugging Face `transformers` Trainer (needs `pip install transformers`).

    from rtool.shim.integrations.hf import RtoolCallback

    trainer = Trainer(model, args, ..., callbacks=[RtoolCallback()])
    trainer.train(resume_from_checkpoint=get_last_checkpoint(args.output_dir))

The Trainer does the saving: on a save-switch request the callback sets `control.should_save`;
on a stop (kill switch, signal, time limit, memory) it sets `should_save` and
`should_training_stop`; `on_save` tells the guard the save returned (the save switch is then
removed). When training ends on a stop, `train()` does not return: the process exits with the
guard's exit code (0, or 85 to requeue; `exit=False` leaves that to you: see `.stopped`). A
complete run calls `guard.finished()`. Logged losses go through `guard.check_loss`.
"""

from __future__ import annotations

from typing import Any

from rtool.shim import Decision, Guard

try:
    from transformers import TrainerCallback
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "rtool.shim.integrations.hf needs transformers (pip install transformers)"
    ) from exc


class RtoolCallback(TrainerCallback):  # type: ignore[misc]
    """Drives a Guard (default: `Guard.from_env(save=None, exit=False)`) from Trainer events."""

    def __init__(self, guard: Guard | None = None, *, exit: bool = True, **options: Any) -> None:
        self.guard = guard or Guard.from_env(save=None, exit=False, **options)
        self.exit = exit

    @property
    def stopped(self) -> Decision | None:
        """The guard's stop decision (reason, exit_code), or None."""
        return self.guard.stopping

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.guard.exit_if_killed()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        d = self.guard.step(state.global_step)
        if d.save_requested:
            control.should_save = True
        if d.stopping:
            control.should_training_stop = True
        return control

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.guard.mark_saved(state.global_step)

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None:
            self.guard.check_loss(loss)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        d = self.guard.stopping
        if d is None:
            self.guard.finished(state.global_step)
            return
        self.guard.close()
        if self.exit:
            raise SystemExit(d.exit_code or 0)
