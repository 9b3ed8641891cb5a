"""The records of the run view: one attempt (what other features read: `nodes`, `state`,
`signature`), a run's ledger, its totals. Typed, JSON-able."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from rtool.core.heartbeat import StepSample
from rtool.core.slurm.hostlist import compress_hostlist
from rtool.core.slurm.parse import expand_hostlist
from rtool.runs import rows
from rtool.runs.inplace import InPlaceRestart
from rtool.runs.signatures.base import Signature

#: Slurm states of an attempt that ended.
ENDED_STATES = frozenset(
    {"COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "CANCELLED"}
    | {"BOOT_FAIL", "DEADLINE", "REQUEUED", "REVOKED"}
    # degraded mode: ENDED, the batch script's end record (no Slurm state known); GONE, it
    # left the queue without an end record
    | {"ENDED", "GONE"}
)
#: The ledger's layout (`format` in its JSON; an unmarked ledger, from rtool 0.1, is format 1).
#: Format 2 writes each attempt's nodes in Slurm's compressed form (`n[1-1000]`, a string) in
#: the stored file; format 1 (a list of names) is still read.
LEDGER_FORMAT = 2
#: States where Slurm (not the training) ended the attempt on purpose.
LIMIT_STATES = frozenset({"TIMEOUT", "PREEMPTED", "DEADLINE"})


class Source(str, enum.Enum):
    """Where an attempt's Slurm facts come from."""

    SACCT = "sacct"
    RECORDS = "records"  # the batch script's own start/end records
    SQUEUE = "squeue"  # seen by rtool in squeue, no end record
    HEARTBEAT = "heartbeat"  # only the training shim's heartbeat


#: Attempt fields copied as they are from the heartbeat of its last launch (rtool.shim).
FROM_HEARTBEAT = (
    *("resumed_from", "checkpoint_folder", "set_aside", "code_version", "packages", "inputs"),
    "save_over_grace",
    *("step_recent", "step_baseline", "stacks"),
)


@dataclass(frozen=True)
class Attempt:
    """One attempt of a run: one Slurm job, array task, or one restart of a requeued job."""

    run: str
    number: int  # 1-based, in start order
    job_id: str  # as Slurm shows it: "90", "88_3"
    restart: int = 0  # how many times this job id ran before this attempt
    job_id_raw: str | None = None  # Slurm's own number ("91" for "88_3")
    array_job_id: str | None = None
    array_task_id: int | None = None
    nodes: tuple[str, ...] = ()
    queued_at: float | None = None
    started: float | None = None
    ended: float | None = None
    state: str = "UNKNOWN"  # RUNNING, PENDING, COMPLETED, FAILED, TIMEOUT, NODE_FAIL ...
    exit_code: int | None = None
    signal: int | None = None
    step_start: int | None = None  # the step it resumed from
    step_end: int | None = None  # the highest step it reached
    last_saved_step: int | None = None
    steps_lost: int | None = None  # done after its last save and done again later
    stop_reason: str | None = None  # the shim's (time limit, signal, hang kill ...)
    error: str | None = None  # "RuntimeError: CUDA out of memory ..." from the shim
    finished: bool = False  # the run called finished() in this attempt
    resumed_from: str | None = None  # the checkpoint rtool.shim.latest_checkpoint chose
    checkpoint_folder: str | None = None  # the folder it looked in (absolute)
    set_aside: str | None = None  # the checkpoints it set aside (incomplete, failed to load)
    code_version: str | None = None  # provenance (rtool.shim.provenance): git revision, state
    packages: str | None = None  # "name==version ..." the training imported
    inputs: str | None = None  # "cfg.yaml sha256:..." of the files on its command line
    save_over_grace: str | None = None  # preempted while a save outlasts the GraceTime
    step_recent: tuple[StepSample, ...] = ()  # its last agreements of the ranks (rtool.shim)
    step_baseline: tuple[float, ...] = ()  # the run's steady step times as it last saw them
    stacks: str | None = None  # where its ranks were when it hung (rtool.runs.stacks)
    signature: Signature | None = None
    log_path: str | None = None
    log_tail: tuple[str, ...] = ()
    source: Source = Source.SACCT

    @property
    def key(self) -> tuple[str, int]:
        return (self.job_id, self.restart)

    @property
    def queue_wait(self) -> float | None:
        if self.queued_at is None or self.started is None:
            return None
        return max(0.0, self.started - self.queued_at)

    @property
    def duration(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return max(0.0, self.ended - self.started)

    @property
    def is_over(self) -> bool:
        return self.state in ENDED_STATES

    @property
    def progress(self) -> int | None:
        """Steps it moved the run forward (None when steps are unknown)."""
        if self.step_end is None:
            return None
        return max(0, self.step_end - (self.step_start or 0))

    def with_(self, **changes: Any) -> Attempt:
        return replace(self, **changes)

    def to_json(self, compact: bool = False) -> dict[str, Any]:
        """`compact`: the stored ledger's form (the nodes as one compressed host list, no
        step baseline: the running attempt's comes from its heartbeat each sweep)."""
        d = asdict(self)
        d["step_baseline"] = [] if compact else list(self.step_baseline)
        d["nodes"] = compress_hostlist(self.nodes) if compact else list(self.nodes)
        d["log_tail"] = list(self.log_tail)
        d["source"] = self.source.value
        d["queue_wait"] = self.queue_wait
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> Attempt:
        known = {f.name for f in fields(Attempt)}
        values = {k: v for k, v in d.items() if k in known}
        nodes = values.get("nodes") or ()
        values["nodes"] = tuple(expand_hostlist(nodes) if isinstance(nodes, str) else nodes)
        values["log_tail"] = tuple(values.get("log_tail") or ())
        values["source"] = Source(values.get("source", Source.SACCT.value))
        values["step_recent"] = StepSample.many(values.get("step_recent"))
        values["step_baseline"] = StepSample.floats(values.get("step_baseline"))
        sig = values.get("signature")
        values["signature"] = Signature(**sig) if isinstance(sig, dict) else None
        return Attempt(**values)


@dataclass(frozen=True)
class Totals:
    attempts: int
    steps_gained: int | None  # steps kept, first step to highest kept (rtool.runs.steps)
    steps_lost: int
    queued_s: float | None  # None: unknown (degraded mode has no submit times)
    computing_s: float
    goodput: float | None  # time that produced kept steps / time allocated
    step_seconds: float | None  # the step time used for goodput
    restarts_in_place: int = 0  # the training restarted inside an allocation
    steps_redone: int = 0  # lost steps a later launch already did again

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Folded:
    """The attempts a ledger no longer keeps in full (the oldest, past `[runs] keep_attempts`),
    summed up so the run's totals stay whole while the ledger stays small."""

    attempts: int = 0
    steps_lost: int = 0
    queued_s: float = 0.0
    computing_s: float = 0.0
    first_step: int | None = None  # the step the run's first attempt started from
    until: float = 0.0  # the latest start among them: older attempts a source reports are these
    keys: tuple[tuple[str, int], ...] = ()  # the last ones' keys (attempts that started at `until`)
    #: One compact row per folded attempt (rtool.runs.compact), and their losses by cause.
    rows: tuple[tuple[Any, ...], ...] = ()
    causes: dict[str, tuple[float, ...]] = field(default_factory=dict)

    def add(self, gone: list[Attempt], now: float) -> Folded:
        if not gone:
            return self
        starts = [a.step_start for a in gone if a.step_start is not None]
        first = self.first_step if self.attempts else (starts[0] if starts else None)
        return Folded(
            attempts=self.attempts + len(gone),
            steps_lost=self.steps_lost + sum(a.steps_lost or 0 for a in gone),
            queued_s=self.queued_s + sum(a.queue_wait or 0.0 for a in gone),
            computing_s=self.computing_s + sum(computing(a, now) for a in gone),
            first_step=first,
            until=max([self.until, *(a.started or 0.0 for a in gone)]),
            keys=(*self.keys, *(a.key for a in gone))[-MAX_FOLDED_KEYS:],
            rows=self.rows,
            causes=self.causes,
        )

    def covers(self, a: Attempt) -> bool:
        """Whether `a` (reported again by sacct or the records) is one of these."""
        return a.key in self.keys or (a.started is not None and a.started < self.until)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["keys"] = [list(k) for k in self.keys]
        d["rows"] = [list(r) for r in self.rows]
        d["causes"] = {k: list(v) for k, v in self.causes.items()}
        return d

    @staticmethod
    def from_json(d: Any) -> Folded | None:
        if not isinstance(d, dict):
            return None
        try:
            keys = tuple((str(k[0]), int(k[1])) for k in d.get("keys") or [])
            return Folded(
                attempts=int(d["attempts"]),
                steps_lost=int(d.get("steps_lost") or 0),
                queued_s=float(d.get("queued_s") or 0.0),
                computing_s=float(d.get("computing_s") or 0.0),
                first_step=int(d["first_step"]) if d.get("first_step") is not None else None,
                until=float(d.get("until") or 0.0),
                keys=keys[-MAX_FOLDED_KEYS:],
                rows=rows.rows_from_json(d.get("rows")),
                causes=rows.causes_from_json(d.get("causes")),
            )
        except (KeyError, TypeError, ValueError, IndexError):
            return None


#: Keys of folded attempts remembered (those that started in the same second as the last one).
MAX_FOLDED_KEYS = 32


def computing(a: Attempt, now: float) -> float:
    """Seconds the attempt held its allocation (until now while it runs)."""
    if a.started is None:
        return 0.0
    end = a.ended if a.ended is not None else now
    return max(0.0, end - a.started)


@dataclass
class Ledger:
    """Every attempt of one run, and what the run view remembers about it between sweeps."""

    run: str
    attempts: list[Attempt] = field(default_factory=list)
    #: True when the Slurm facts come from sacct; False: degraded mode (see `note`).
    accounting: bool = True
    note: str = ""
    finished: bool = False
    total_steps: int | None = None
    best_step: int | None = None  # the highest step the run reached
    best_step_at: float | None = None  # when it was first reached (heartbeat time)
    step_seconds: float | None = None  # the training's step time (from the heartbeat)
    updated: float | None = None
    #: The run's crash loop that was acted on (hold), so the hold is done once.
    crash_loop_at: float | None = None
    #: The rtool that last rebuilt this ledger (the watcher), and the one whose shim wrote the
    #: run's latest heartbeat (the trainer's); None when unknown (rtool 0.1).
    rtool_version: str | None = None
    shim_version: str | None = None
    #: The oldest attempts, summed up (the ledger keeps the last `keep_attempts` in full).
    folded: Folded | None = None
    #: The training's restarts inside an allocation, oldest first (at most MAX_RESTARTS).
    restarts: list[InPlaceRestart] = field(default_factory=list)

    def restarts_of(self, a: Attempt) -> list[InPlaceRestart]:
        """The in-place restarts that happened in attempt `a`, in launch order."""
        return [r for r in self.restarts if r.attempt_key == a.key]

    @property
    def last(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    def to_json(self, compact: bool = False) -> dict[str, Any]:
        """`compact`: the stored form (node lists compressed), else `rtool history --json`'s."""
        plain = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _LISTS}
        return {
            "format": LEDGER_FORMAT,
            **plain,
            "folded": self.folded.to_json() if self.folded else None,
            "attempts": [a.to_json(compact) for a in self.attempts],
            "restarts": [r.to_json() for r in self.restarts],
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> Ledger:
        return Ledger(
            run=str(d.get("run", "")),
            attempts=[Attempt.from_json(a) for a in d.get("attempts") or [] if isinstance(a, dict)],
            accounting=bool(d.get("accounting", True)),
            note=str(d.get("note") or ""),
            finished=bool(d.get("finished", False)),
            rtool_version=_opt_str(d.get("rtool_version")),
            shim_version=_opt_str(d.get("shim_version")),
            folded=Folded.from_json(d.get("folded")),
            restarts=[
                InPlaceRestart.from_json(r) for r in d.get("restarts") or [] if isinstance(r, dict)
            ],
            **{k: d.get(k) for k in _NUMBERS},
        )


#: The Ledger's lists (written item by item) and its numbers (read back as stored).
_LISTS = ("attempts", "restarts")
_NUMBERS = ("total_steps", "best_step", "best_step_at", "step_seconds", "updated", "crash_loop_at")


def _opt_str(value: Any) -> str | None:
    return str(value)[:40] if isinstance(value, str) and value else None
