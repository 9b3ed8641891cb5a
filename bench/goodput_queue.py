"""The queue-wait model of bench/goodput.py: every new allocation of a run waits in the queue.

On a busy cluster a job that leaves its allocation (the next array task after a time limit or a
crash, a requeued job after a node failure, a hang requeued by a watchdog) goes back through
the queue: minutes to hours before it runs again. The local cluster starts it at once. The
gate makes the cost show: the run's jobs are submitted held, and the bench's loop releases the
next one only `wait` seconds after the run's previous allocation ended; a job Slurm requeued
(pending again, not held) is held at once. A restart inside the allocation (rtool's restart in
place) never goes through the gate: it keeps the allocation.

    gate = QueueGate(slurm, name, wait=60)
    while running: gate.tick(time.time())
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from rtool.core.slurm import RUNNING_STATES, Slurm, SlurmError

HELD = ("JobHeldUser", "JobHeldAdmin")


@dataclass
class QueueGate:
    slurm: Slurm
    name: str
    wait: float
    last_end: float | None = None  # when the run last had no allocation after having one
    released: set[str] = field(default_factory=set)  # pending jobs let through, not started yet
    waits: list[float] = field(default_factory=list)  # each release's wait since the last end
    _running: bool = False

    def tick(self, now: float) -> None:
        if self.wait <= 0:
            return
        try:
            jobs = self.slurm.squeue(names=[self.name])
        except SlurmError:
            return
        running = [j for j in jobs if j.state in RUNNING_STATES]
        pending = [j for j in jobs if j.state == "PENDING"]
        if running:
            self._running = True
            self.released -= {j.job_id for j in running}
            return
        if self._running:
            self._running, self.last_end = False, now
        free = [j for j in pending if j.reason not in HELD and j.job_id not in self.released]
        for j in free:  # requeued by Slurm (a node failure) or by rtool: back in the queue
            with contextlib.suppress(SlurmError):
                self.slurm.hold(j.job_id)
        if self.released & {j.job_id for j in pending}:
            return  # one is on its way
        held = [j for j in pending if j.reason in HELD or j in free]
        start = self.last_end if self.last_end is not None else now - self.wait  # the 1st: now
        if held and now >= start + self.wait:
            nxt = min(held, key=_order)
            target = nxt.job_id if not nxt.pending_tasks else f"{nxt.array_job_id}_{_first(nxt)}"
            with contextlib.suppress(SlurmError):
                self.slurm.release(target)
                self.released.add(target)
                if self.last_end is not None:
                    self.waits.append(now - start)


def _order(j: object) -> tuple[int, str]:
    job_id = str(getattr(j, "job_id", ""))
    return (0 if "[" not in job_id else 1, job_id)


def _first(j: object) -> str:
    """The first task id of a pending array record (`88_[3-9%1]` -> 3)."""
    tasks = str(getattr(j, "array_task", "") or "")
    head = tasks.lstrip("[").split("-")[0].split(",")[0].split("%")[0]
    return head if head.isdigit() else "0"
