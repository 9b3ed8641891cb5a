"""The small interface every watchdog satisfies, and what a check returns.

A watchdog is built from its config entries (specs). The runner calls `probe(env)` (I/O, with
timeouts, may read and append the watchdog's own history in the state dir) and then the pure
`check(probe_output, now)`, which turns the observation into `CheckResult`s. Nothing here prints,
alerts or exits.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rtool.core.alert import Alert, Status

if TYPE_CHECKING:
    from rtool.core.slurm import Slurm, SqueueJob
    from rtool.core.state import StateDir


@dataclass
class CheckResult:
    """One status line: `DISK CRITICAL - /scratch 91% used (limit 80%)`.

    watchdog: `disk`, `job` ...; what: the watched thing (`/scratch`, a job name, a path);
    the alert key is `<watchdog>:<what>`. `actions` are side effects the runner carries out
    (`dump:pid:123`, `dump:job:456`, `requeue:456`, `signal:USR1:456`), at most once per
    `action_token`.
    """

    watchdog: str
    what: str
    status: Status
    summary: str
    fields: dict[str, str] = field(default_factory=dict)
    actions: list[str] = field(default_factory=list)
    action_token: str | None = None

    @property
    def key(self) -> str:
        return f"{self.watchdog}:{self.what}"

    @property
    def line(self) -> str:
        return f"{self.watchdog.upper()} {self.status.name} - {self.summary}"

    def to_alert(self, now: float) -> Alert:
        return Alert(self.key, self.status, self.summary, dict(self.fields), now)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "watchdog": self.watchdog,
            "what": self.what,
            "status": self.status.name,
            "code": int(self.status),
            "summary": self.summary,
            "fields": self.fields,
        }


@dataclass(frozen=True)
class SqueueQuery:
    """What a watchdog needs from the one squeue call of a sweep (None = no filter)."""

    names: frozenset[str] | None = None
    users: frozenset[str] | None = None

    @staticmethod
    def union(queries: list[SqueueQuery]) -> SqueueQuery:
        """One query that returns every job any of `queries` would return."""
        names: set[str] | None = set()
        users: set[str] | None = set()
        for q in queries:
            names = None if names is None or q.names is None else names | q.names
            users = None if users is None or q.users is None else users | q.users
        return SqueueQuery(
            frozenset(names) if names is not None else None,
            frozenset(users) if users is not None else None,
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

    def jobs(self) -> list[SqueueJob]:
        """The sweep's squeue snapshot (one call, shared by every watchdog; raises SlurmError)."""
        with self._lock:
            if self._jobs is None and self._error is None:
                try:
                    self._jobs = self._squeue()
                except Exception as exc:
                    self._error = exc
            if self._error is not None:
                raise self._error
            assert self._jobs is not None
            return self._jobs

    def _squeue(self) -> list[SqueueJob]:
        if self.slurm is None:
            from rtool.core.slurm import Slurm

            self.slurm = Slurm()
        q = self.query
        return self.slurm.squeue(
            names=sorted(q.names) if q.names else None,
            users=sorted(q.users) if q.users else None,
        )


class Watchdog(Protocol):
    """One kind of check, bound to its config entries."""

    name: str

    def targets(self) -> list[str]:
        """The `what` of every result it produces (used when its probe crashes)."""
        ...

    def squeue_query(self) -> SqueueQuery | None:
        """The jobs it needs from the sweep's squeue call, or None when it needs none."""
        ...

    def probe(self, env: ProbeEnv) -> Any:
        """Observe (with timeouts); never raises for an expected failure, records it instead."""
        ...

    def check(self, probe_output: Any, now: float) -> list[CheckResult]:
        """Pure: results for one observation."""
        ...


def unknown(watchdog: str, what: str, why: str) -> CheckResult:
    return CheckResult(watchdog, what, Status.UNKNOWN, f"{what}: {why}", {"error": why})
