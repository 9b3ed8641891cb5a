"""What the parts of one Guard share, as plain records handed to each part's constructor:
the loop (`Loop`), what was found (`Sources`), what was measured (`Timing`), the polling
options (`MonitorConfig`), and what guard.step() decided (`Decision`, its reasons and exit codes).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from rtool.shim.options import GuardOptions

#: Flag bits, exchanged between ranks (rtool.shim.distributed.FLAG_BITS of them).
F_KILL, F_SIGNAL, F_TIME, F_MEMORY, F_GPU, F_NONFINITE, F_SAVE, F_PERIODIC = (
    1 << i for i in range(8)
)


# -- what the guard decided at a step, its stop reasons and exit codes ----------------------

REQUEUE_EXIT_CODE = 85
NONFINITE_EXIT_CODE = 86
SAVE_FAILED_EXIT_CODE = 87
SAVE_TIMEOUT_EXIT_CODE = 88
#: The process was ended by the shim as hung (no step for `hang_after`), or because another
#: rank hung or crashed: the batch script restarts it in place (docs/runs.md).
HANG_EXIT_CODE = 89

# Stop / save reasons (Decision.reason, heartbeat stop_reason).
KILLED, SIGNAL, TIME_LIMIT, MEMORY = "killed", "signal", "time_limit", "memory"
GPU_MEMORY, NONFINITE, SAVE_SWITCH = "gpu_memory", "nonfinite_loss", "save_switch"
SAVE_TIMEOUT, UNRESPONSIVE = "save_timeout", "unresponsive"
HUNG, PEER_FAILED = "hung", "peer_failed"
PREEMPTED = "preempted"  # a SIGNAL stop while Slurm preempts the job
PERIODIC = "periodic"  # a save of the save_every cadence (training goes on)


@dataclass(frozen=True)
class Decision:
    """What guard.step() did at this step."""

    saved: bool = False  # save(step) was called and returned
    stopping: bool = False  # training must stop (the guard exits unless exit=False)
    reason: str | None = None  # killed, signal, time_limit, memory, gpu_memory, ...
    save_requested: bool = False  # a save was due (with save=None: the caller must save)
    exit_code: int | None = None  # the code the process exits (or should exit) with
    step: int | None = None
    detail: str | None = None


CONTINUE = Decision()


@dataclass(slots=True)
class Loop:
    """The training loop as the other parts see it (slots: the step path writes it); any part
    calls `wake()` to make the next step look."""

    rank: int  # torch.distributed's rank once detected
    step: int | None = None  # the last step the loop completed (guard.step)
    alive: int = 0  # bumped by alive(): progress that is not a step (evaluation)
    alert: bool = False  # the next step takes the slow path
    stopping: bool = False  # a stop reached its safe point (its save bounds it now)

    def wake(self) -> None:
        self.alert = True


@dataclass
class Sources:
    """What the thread, the signal handlers and check_loss found (one writer per attribute);
    read by the step path, as the F_* bits the ranks agree on (`flags()`)."""

    signal: str | None = None  # written by the signal handler
    deadline_signal: str | None = None  # a signal announcing the job's end (the thread acts)
    term_at: float | None = None  # monotonic time of the first SIGTERM (handler or wakeup fd)
    kill: bool = False
    save_ident: tuple[int, int] | None = None  # (inode, mtime_ns) of a save switch to act on
    save_handled: tuple[int, int] | None = None  # the switch already saved for (or failed)
    time_up: str | None = None
    memory: str | None = None
    gpu: str | None = None
    nonfinite: bool = False  # written by check_loss
    deadline_at: float | None = None  # the stop time, near: the step path reads the clock
    periodic: bool = False  # a save of the save_every cadence is due
    lock: threading.Lock = field(default_factory=threading.Lock)

    def flags(self) -> int:
        """The F_* bits of what was found."""
        bits = (
            (self.kill, F_KILL),
            (self.signal, F_SIGNAL),
            (self.time_up, F_TIME),
            (self.memory, F_MEMORY),
            (self.gpu, F_GPU),
            (self.nonfinite, F_NONFINITE),
            (self.save_ident is not None, F_SAVE),
            (self.periodic, F_PERIODIC),
        )
        return sum(bit for found, bit in bits if found)


#: How many of the latest measured saves `save_every = "auto"` takes the median of.
RECENT_SAVES = 5


@dataclass
class Timing:
    """Step and save durations seen so far (seconds), and when the step last moved."""

    recent_step: float | None = None
    longest_step: float = 0.0
    longest_save: float = 0.0
    exit_need: float = 0.0  # the longest stop-to-end of earlier attempts (exit_need.py)
    saves: int = 0  # bumped by every save, so a step interval with a save is not measured
    last_save_step: int | None = None
    last_save_time: float | None = None
    last_save_seconds: float | None = None
    recent_saves: list[float] = field(default_factory=list)  # the last RECENT_SAVES measured
    first_step: int | None = None  # the first step of this process
    first_step_time: float | None = None  # when it was seen
    saving_since: float | None = None  # monotonic start of a save in progress (no hang then)
    nonfinite: int = 0  # non-finite losses in a row
    seen_step: int | None = None  # the step the monitor thread last saw (the heartbeat's)
    seen_at: float = 0.0  # monotonic time it saw that step first
    progress_time: float | None = None  # wall time the step last advanced

    def saved(self, step: int | None, seconds: float | None) -> None:
        """A save of `step` returned after `seconds` (None: not measured)."""
        self.saves += 1
        self.last_save_step = step
        self.last_save_time = time.time()
        if seconds is not None:
            self.last_save_seconds = seconds
            self.longest_save = max(self.longest_save, seconds)
            self.recent_saves = [*self.recent_saves, seconds][-RECENT_SAVES:]

    def typical_save(self) -> float:
        """The median of the recent measured saves (one slow save does not set the cadence),
        else the longest carried from an earlier attempt; 0 before any."""
        if not self.recent_saves:
            return self.longest_save
        s = sorted(self.recent_saves)
        return (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2

    def step_age(self, mono: float) -> float:
        """How long the current step has run so far (0 before the first step)."""
        return mono - self.seen_at if self.seen_step is not None else 0.0


@dataclass
class MonitorConfig:
    """The options the thread polls by, and what it learns while the run goes on."""

    opts: GuardOptions
    job_id: str | None = None  # whose EndTime is asked (None: `end_time` was given)
    end_time: float | None = None  # the job's end, asked again every `end_time_refresh`
    extra_latency: float = 0.0  # sync latency of torch.distributed, added to the auto margin
    gpu_device: int = 0

    @classmethod
    def from_options(cls, o: GuardOptions, job_id: str | None) -> MonitorConfig:
        gpu = _gpu_device() if o.min_gpu_free is not None else 0
        return cls(o, job_id, o.end_time, gpu_device=gpu)


def _gpu_device() -> int:
    try:
        import torch

        return int(torch.cuda.current_device()) if torch.cuda.is_available() else 0
    except Exception:
        return 0
