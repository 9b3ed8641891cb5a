"""The small interface every watchdog satisfies, and what a check returns.

A watchdog is built from its config entries (specs). The runner calls `probe(env)` (I/O, with
timeouts, may read and append the watchdog's own history in the state dir) and then the pure
`check(probe_output, now)`, which turns the observation into `CheckResult`s. Nothing here prints,
alerts or exits.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from rtool.core.alert import Alert, AlertKey, Cause, Status
from rtool.core.identity import current_user
from rtool.watchdogs.metrics import Measure

if TYPE_CHECKING:
    from rtool.core.slurm import Slurm, SqueueJob
    from rtool.core.slurm.nodes import NodeState
    from rtool.core.state import StateDir


#: The causes raised by earlier sweeps (rtool/watchdogs/causes.py), which the next sweep reads.
CAUSES_FILE = "watch/causes.json"


@dataclass
class Output:
    """How a sweep reports its results: status lines or JSON, tee, Prometheus textfile, notify,
    dry run (rtool/watchdogs/runner.py)."""

    json: bool = False
    notify: bool = True
    tee: Path | None = None
    #: node_exporter textfile-collector folder (rtool/watchdogs/prometheus.py), or None
    prom_textfile: Path | None = None
    #: look only: say what would be done and sent, do none of it (rtool/watchdogs/dryrun.py)
    dry_run: bool = False


class ActionKind(enum.Enum):
    DUMP = "dump"  # attach a py-spy dump of `pid`, or of the python processes of `job`
    REQUEUE = "requeue"  # scontrol requeue `job`
    HOLD = "hold"  # scontrol hold `job`
    SIGNAL = "signal"  # scancel --signal=`signal` --full `job`
    DELETE = "delete"  # remove the checkpoints `names` of the folder `path` (retention)


@dataclass(frozen=True)
class Action:
    """A side effect a result asks the runner for (rtool/watchdogs/actions.py carries it out)."""

    kind: ActionKind
    job: str | None = None
    pid: int | None = None
    signal: str | None = None  # without SIG: USR1
    path: str | None = None  # DELETE: the folder
    names: tuple[str, ...] = ()  # DELETE: entries of that folder

    @classmethod
    def dump_pid(cls, pid: int) -> Action:
        return cls(ActionKind.DUMP, pid=pid)

    @classmethod
    def dump_job(cls, job: str) -> Action:
        return cls(ActionKind.DUMP, job=job)

    @classmethod
    def requeue(cls, job: str) -> Action:
        return cls(ActionKind.REQUEUE, job=job)

    @classmethod
    def hold(cls, job: str) -> Action:
        return cls(ActionKind.HOLD, job=job)

    @classmethod
    def send(cls, signal: str, job: str) -> Action:
        return cls(ActionKind.SIGNAL, job=job, signal=signal)

    @classmethod
    def delete(cls, folder: str, names: tuple[str, ...]) -> Action:
        return cls(ActionKind.DELETE, path=folder, names=names)

    def __str__(self) -> str:
        """`dump:pid:12`, `dump:job:34`, `requeue:34`, `signal:USR1:34`, `delete:ckpt:a,b`
        (logs, done marks)."""
        if self.kind is ActionKind.DUMP:
            return f"dump:pid:{self.pid}" if self.pid is not None else f"dump:job:{self.job}"
        if self.kind is ActionKind.SIGNAL:
            return f"signal:{self.signal}:{self.job}"
        if self.kind is ActionKind.DELETE:
            return f"delete:{self.path}:{','.join(self.names)}"[:300]
        return f"{self.kind.value}:{self.job}"


@dataclass
class CheckResult:
    """One status line: `DISK CRITICAL - /scratch 91% used (limit 80%)`.

    watchdog: `disk`, `job` ...; what: the watched thing (`/scratch`, a job name, a path);
    the alert key is `<watchdog>:<what>`. `actions` are side effects the runner carries out
    (py-spy dump, requeue, hold, signal), at most once per `action_token`.
    """

    watchdog: str
    what: str
    status: Status
    summary: str
    fields: dict[str, str] = field(default_factory=dict)
    actions: list[Action] = field(default_factory=list)
    action_token: str | None = None
    #: numbers for perfdata and Prometheus (attached by watchdogs.metric_sources)
    measures: list[Measure] = field(default_factory=list)
    #: what the result may follow from (the nodes of its run, slurmctld): a cause that is bad
    #: gets its own result (rtool/watchdogs/causes.py) and notify folds this one into it
    depends: tuple[Cause, ...] = ()

    @property
    def key(self) -> str:
        return str(AlertKey(self.watchdog, self.what))

    @property
    def line(self) -> str:
        return f"{self.watchdog.upper()} {self.status.name} - {self.summary}"

    def to_alert(self, now: float) -> Alert:
        return Alert(self.key, self.status, self.summary, dict(self.fields), now, self.depends)

    def to_json(self) -> dict[str, Any]:
        doc = {
            "key": self.key,
            "watchdog": self.watchdog,
            "what": self.what,
            "status": self.status.name,
            "code": int(self.status),
            "summary": self.summary,
            "fields": self.fields,
            "measures": [
                {"metric": m.metric.info.prom, "label": m.label(self.what), "value": m.value}
                for m in self.measures
            ],
        }
        if self.depends:
            doc["depends"] = [c.key for c in self.depends]
        return doc


@dataclass(frozen=True)
class SqueueQuery:
    """What a watchdog needs from the one squeue call of a sweep.

    names: None = any name. users: None = only yours (the default everywhere); other users
    only for a read-only watch (`[[watch.job]] users`), `everyone` for one of a unix group.
    """

    names: frozenset[str] | None = None
    users: frozenset[str] | None = None
    everyone: bool = False

    def user_set(self) -> frozenset[str]:
        return self.users if self.users is not None else frozenset([current_user()])

    @staticmethod
    def union(queries: list[SqueueQuery]) -> SqueueQuery:
        """One query that returns every job any of `queries` would return."""
        names: set[str] | None = set()
        users: set[str] = set()
        for q in queries:
            names = None if names is None or q.names is None else names | q.names
            users |= q.user_set()
        return SqueueQuery(
            frozenset(names) if names is not None else None,
            frozenset(users),
            any(q.everyone for q in queries),
        )


class ProbeEnv:
    """What probes may use: the Slurm layer (one squeue call per sweep), the state dir."""

    def __init__(
        self, slurm: Slurm | None, state: StateDir, query: SqueueQuery | None = None
    ) -> None:
        self.slurm = slurm
        self.state = state
        self.query = query or SqueueQuery()
        self._lock = threading.Lock()
        self._jobs: list[SqueueJob] | None = None
        self._error: Exception | None = None
        self._nodes: list[NodeState] | None = None
        self._nodes_error: Exception | None = None

    def jobs(self) -> list[SqueueJob]:
        """The sweep's squeue snapshot (one call, shared by every watchdog; raises SlurmError)."""
        with self._lock:
            if self._jobs is None and self._error is None:
                q = self.query
                try:
                    self._jobs = self._slurm().squeue(
                        names=sorted(q.names) if q.names else None,
                        users=None if q.everyone else sorted(q.user_set()),
                        all_users=q.everyone,
                    )
                except Exception as exc:
                    self._error = exc
            if self._error is not None:
                raise self._error
            assert self._jobs is not None
            return self._jobs

    def squeue_failure(self) -> Exception | None:
        """The error of the sweep's squeue call, if it was made and failed."""
        with self._lock:
            return self._error

    def nodes(self) -> list[NodeState]:
        """The sweep's sinfo snapshot of every node (one call, shared; raises SlurmError)."""
        with self._lock:
            if self._nodes is None and self._nodes_error is None:
                try:
                    self._nodes = self._slurm().sinfo_nodes()
                except Exception as exc:
                    self._nodes_error = exc
            if self._nodes_error is not None:
                raise self._nodes_error
            assert self._nodes is not None
            return self._nodes

    def _slurm(self) -> Slurm:
        if self.slurm is None:
            from rtool.core.slurm import Slurm

            self.slurm = Slurm()
        return self.slurm


SpecT = TypeVar("SpecT")


class SpecWatchdog(Generic[SpecT]):
    """The base of every watchdog, built from its config entries (specs).

    A new watchdog is one module with its entry type (a `Section` of `setting()` fields) and a
    subclass that sets `name` and `spec` and writes `target`, `probe` (I/O, bounded by
    `self.timeout_of(spec)`) and the pure `check`; and one line in
    `rtool.watchdogs.registry.LINES` (docs/architecture.md has a worked example). The class
    docstring is the command's help (a summary line, then an Example); a field named like one of
    the options every `rtool watch` command has (`timeout`) is given by that one.
    """

    #: The watchdog's name: `rtool watch NAME`, `[[watch.NAME]]`, the alert keys' prefix.
    name: ClassVar[str]
    #: Its config entry type (a `Section`), or None when it has no `[[watch.NAME]]` entries.
    spec: ClassVar[type[Any]]
    #: Whether `[[watch.NAME]]` entries configure it (the [watch] section gets a field).
    in_config: ClassVar[bool] = True
    #: `rtool watch NAME X` starts from the config's `[[watch.NAME]]` entry whose field of this
    #: name is X (its flags override that entry); None: the flags and the declared defaults.
    config_entry_by: ClassVar[str | None] = None

    def __init__(self, specs: list[SpecT], timeout: float = 10.0) -> None:
        self.specs = specs
        self.timeout = timeout

    @classmethod
    def from_entries(cls, entries: list[Any], timeout: float, config: Any) -> SpecWatchdog[Any]:
        """The watchdog of its `[[watch.NAME]]` entries (`config`: the app config or None)."""
        return cls(entries, timeout).configure(config)

    @classmethod
    def command_base(cls, config: Any, state: Any, given: dict[str, Any]) -> dict[str, Any] | None:
        """Hook: what `rtool watch NAME` starts from before its flags (`state`: the state dir);
        None: the `[[watch.NAME]]` entry named by `config_entry_by`, if any."""
        return None

    def configure(self, config: Any) -> SpecWatchdog[SpecT]:
        """Hook for a watchdog that needs another section of the app config (`Config`)."""
        return self

    def target(self, spec: SpecT) -> str:
        """The `what` of a spec's results: `/scratch`, a job name."""
        raise NotImplementedError

    def targets(self) -> list[str]:
        """The `what` of every result it produces (used when its probe crashes)."""
        return [self.target(s) for s in self.specs]

    def squeue_query(self) -> SqueueQuery | None:
        """The jobs it needs from the sweep's squeue call, or None when it needs none."""
        return None

    def timeout_of(self, spec: SpecT) -> float:
        """The spec's own `timeout`, else the watchdog's."""
        return float(getattr(spec, "timeout", None) or self.timeout)

    def max_timeout(self) -> float:
        return max([self.timeout, *(self.timeout_of(s) for s in self.specs)])

    def probe(self, env: ProbeEnv) -> Any:
        """Observe (with timeouts); never raises for an expected failure, records it instead."""
        raise NotImplementedError

    def check(self, probe_output: Any, now: float) -> list[CheckResult]:
        """Pure: results for one observation."""
        raise NotImplementedError


#: What the runner runs (rtool/watchdogs/runner.py).
Watchdog = SpecWatchdog[Any]


def unknown(watchdog: str, what: str, why: str) -> CheckResult:
    return CheckResult(watchdog, what, Status.UNKNOWN, f"{what}: {why}", {"error": why})
