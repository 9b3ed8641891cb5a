"""One restart of the training inside its allocation (the batch script's in-place restart after
a crash or a hang), as the run's ledger keeps it (rtool.runs.model.Ledger.restarts)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class InPlaceRestart:
    """One restart of the training inside its allocation (the batch script's in-place
    restart after a crash or a hang): an entry of its own in the run's ledger, beside the
    attempt (job, restart) it happened in. Made from the restart records (rtool.runs.inplace)
    and the heartbeats of the launches before and after it."""

    run: str
    job_id: str  # the attempt's job id as Slurm shows it ("88_3")
    restart: int  # the attempt's Slurm restart count
    launch: int  # the launch it started (1: the first in-place restart of the attempt)
    time: float  # when the batch script decided to restart (the failed launch had ended)
    exit_code: int | None = None  # of the failed launch (srun's, or the launcher's)
    cause: str = "crashed"  # hung, crashed, oom_kill, peer_failed, signal, exit
    detail: str = ""  # "RuntimeError: CUDA error ...", "no step for 8.0s after step 850"
    nodes: tuple[str, ...] = ()
    fault_at: float | None = None  # the failed launch's last progress (its heartbeat's time)
    process_started: float | None = None  # when the failed launch's guard was made
    process_start_step: int | None = None  # the first step the failed launch ran
    step_reached: int | None = None  # the last step the failed launch ran
    last_saved_step: int | None = None  # the checkpoint the restart resumes from
    resumed_step: int | None = None  # the first step the restarted launch ran
    back_at: float | None = None  # when the restarted launch made its first step

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.job_id, self.restart, self.launch)

    @property
    def attempt_key(self) -> tuple[str, int]:
        return (self.job_id, self.restart)

    @property
    def steps_redone(self) -> int | None:
        """Steps the failed launch ran that the restarted one runs again."""
        if self.step_reached is None or self.resumed_step is None:
            return None
        return max(0, self.step_reached - self.resumed_step + 1)

    @property
    def lost_s(self) -> float | None:
        """From the failed launch's last step to the restarted launch's first step."""
        if self.back_at is None or self.fault_at is None:
            return None
        return max(0.0, self.back_at - self.fault_at)

    @property
    def progress(self) -> int | None:
        """Steps the failed launch moved the run forward (None when unknown)."""
        if self.step_reached is None or self.process_start_step is None:
            return None
        return max(0, self.step_reached - self.process_start_step)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["nodes"] = list(self.nodes)
        d["steps_redone"], d["lost_s"] = self.steps_redone, self.lost_s
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> InPlaceRestart:
        known = {f.name for f in fields(InPlaceRestart)}
        values = {k: v for k, v in d.items() if k in known}
        values["nodes"] = tuple(values.get("nodes") or ())
        return InPlaceRestart(**values)
