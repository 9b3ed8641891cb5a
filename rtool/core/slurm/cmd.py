"""The Slurm command layer: the only caller of squeue, scontrol, sbatch, scancel and sacct.

Every call goes through `rtool.core.proc.run` with a timeout and `SLURM_TIME_FORMAT=standard`
(a user's `relative` or strftime format would break every time parser). Failures raise
`SlurmError` (`SlurmTimeout`), which checks turn into UNKNOWN, never "job missing". Release
differences: docs/slurm-releases.md. Scoped to the user rtool runs as (its uid), root included:
squeue and sacct ask for `--user=<you>` unless a read-only watch names others, scancel always
does, and an action on a job id first asks `scontrol show job` whose it is (`ForeignJob`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from rtool.core import validate as v
from rtool.core.identity import current_user
from rtool.core.proc import ProcError, ProcTimeout, Result, run
from rtool.core.slurm import owner
from rtool.core.slurm.argv import reads_only, squeue_argv
from rtool.core.slurm.failures import (
    AccountingDisabled,
    ForeignJob,
    NoFailedNode,
    SlurmError,
    SlurmTimeout,
)
from rtool.core.slurm.hostlist import compress_hostlist
from rtool.core.slurm.nodes import (
    EVENTS_FORMAT,
    SINFO_FORMAT,
    NodeEvent,
    NodeState,
    exclusion_applied,
    parse_node_events,
    parse_sinfo_nodes,
)
from rtool.core.slurm.owner import check_owner, check_records
from rtool.core.slurm.parse import (
    ParseError,
    SqueueJob,
    SubmitResult,
    parse_sbatch_parsable,
    parse_scontrol_show_job,
    parse_squeue,
)
from rtool.core.slurm.sacct import (
    DISABLED_MESSAGE,
    NO_FAILED_NODE,
    SacctQuery,
    SacctRecord,
    parse_sacct,
    sacct_argv,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

log = logging.getLogger(__name__)

#: Set for every Slurm command: times as `2026-11-21T19:37:00` whatever the user's setting.
SLURM_ENV = {"SLURM_TIME_FORMAT": "standard"}


class SlurmReads:
    """The read-only half of `Slurm`: the command runner, queue and accounting queries.
    `look_only` (`--dry-run`): only commands that read run (the rest: `withheld`)."""

    def __init__(self, timeout: float = 30.0, *, look_only: bool = False) -> None:
        self.timeout = timeout
        #: Whose jobs are queried by default and the only ones acted on (the process's uid).
        self.user = owner.user_arg(current_user())
        #: Every command run, in order (used by benchmarks to count squeue calls per sweep).
        self.calls: list[list[str]] = []
        self.look_only = look_only
        self.withheld: list[list[str]] = []  # look_only: what would have run, in order

    def _run(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        cwd: str | None = None,
        check: bool = True,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Result:
        if self.look_only and not reads_only(argv):
            # hold, requeue, an ExcNodeList update, scancel, sbatch, srun, scrontab changes:
            # recorded, not run, and answered with an empty success, whoever asks for it
            self.withheld.append(list(argv))
            log.info("look-only: not running %s", " ".join(argv))
            return Result(list(argv), 0, "", "")
        self.calls.append(list(argv))
        limit = timeout or self.timeout
        try:
            full = {**SLURM_ENV, **(env or {})}
            return run(argv, timeout=limit, input=input, cwd=cwd, check=check, env=full)
        except ProcTimeout as exc:
            raise SlurmTimeout(exc.argv, f"timed out after {limit:g}s") from None
        except ProcError as exc:
            detail = f"exit code {exc.returncode}" if exc.returncode is not None else "failed"
            raise SlurmError(exc.argv, detail, exc.returncode, exc.stderr) from None

    def squeue(
        self,
        *,
        user: str | None = None,
        users: Iterable[str] | None = None,
        names: Iterable[str] | None = None,
        job_ids: Iterable[str] | None = None,
        partition: str | None = None,
        states: str = "all",
        all_users: bool = False,
    ) -> list[SqueueJob]:
        """Jobs known to slurmctld (one call, whatever the number of names): only yours unless
        `user`/`users` name others or `all_users` asks for everyone's (read-only watches)."""
        user_list = [owner.user_arg(u) for u in [*(users or []), *([user] if user else [])]]
        if not (user_list or all_users):
            user_list = [self.user]
        job_ids = v.job_ids(job_ids) if job_ids else None
        argv = squeue_argv(states, user_list, names, partition, job_ids)
        try:
            res = self._run(argv)
        except SlurmError as exc:
            if job_ids and "Invalid job id" in exc.stderr:
                return []  # the job left the queue
            raise
        return parse_squeue(res.stdout)

    def show_job(self, job_id: str) -> list[dict[str, str]]:
        """`scontrol show job ID` records ([] when the job is no longer known)."""
        try:
            res = self._run(["scontrol", "show", "job", v.job_id(job_id)])
        except SlurmError as exc:
            if "Invalid job id" in exc.stderr:
                return []
            raise
        return parse_scontrol_show_job(res.stdout)

    def ping(self) -> bool:
        """True when slurmctld answers."""
        try:
            res = self._run(["scontrol", "ping"], check=False)
        except SlurmError:
            return False
        return res.returncode == 0 and "UP" in res.stdout

    def sacct(self, **query: Unpack[SacctQuery]) -> list[SacctRecord]:
        """Accounting records of your jobs (one per attempt unless `all_attempts=False`),
        always with `--user=<you>`; the query: `SacctQuery`. `failed_node` raises NoFailedNode
        where sacct lacks it. AccountingDisabled on a cluster without accounting, SlurmError
        when sacct cannot answer (slurmdbd down...), ValueError on a bad job id or name."""
        failed_node = query.get("failed_node", False)
        argv = sacct_argv(**query)
        argv.append(f"--user={self.user}")
        try:
            res = self._run(argv)
        except SlurmError as exc:  # a SlurmTimeout too: its stderr is empty
            err = (exc.stderr or "").lower()
            if DISABLED_MESSAGE in err:
                raise AccountingDisabled(argv, "Slurm accounting storage is disabled") from None
            if failed_node and NO_FAILED_NODE in err:
                raise NoFailedNode(argv, "this sacct has no FailedNode field") from None
            raise
        return parse_sacct(res.stdout, failed_node)

    def accounting_available(self) -> bool:
        """False when the cluster has no accounting storage; raises SlurmError when sacct
        cannot answer for another reason (a database that is down is not "no accounting")."""
        try:
            self.sacct(since=time.time(), all_attempts=False)
        except AccountingDisabled:
            return False
        return True

    def node_events(self, nodes: Iterable[str], since: float, until: float) -> list[NodeEvent]:
        """slurmdbd's events of `nodes` (DOWN, DRAIN... with their reason) that overlap the
        window from `since` to `until` (epoch seconds): `sacctmgr list events event=node`.
        [] where slurmdbd keeps them private (PrivateData=events); SlurmError when it fails."""
        names = compress_hostlist([v.node(n) for n in nodes], sort=True)
        if not names:
            return []
        stamp = "%Y-%m-%dT%H:%M:%S"
        argv = ["sacctmgr", "-n", "-P", "list", "events", "event=node", f"nodes={names}"]
        argv += [f"start={time.strftime(stamp, time.localtime(since))}"]
        argv += [f"end={time.strftime(stamp, time.localtime(until))}", f"format={EVENTS_FORMAT}"]
        return parse_node_events(self._run(argv).stdout)


class Slurm(SlurmReads):
    """Thin, typed access to the Slurm commands. One instance per process is enough."""

    def sbatch(
        self,
        args: Sequence[str] = (),
        *,
        script: str | None = None,
        script_path: str | None = None,
        cwd: str | None = None,
    ) -> SubmitResult:
        """Submit a script (given as text on stdin, or as a path). Returns the job id."""
        argv = ["sbatch", "--parsable", *(v.plain(a, "sbatch argument") for a in args)]
        if script_path:
            argv.append(v.path_arg(script_path, "batch script"))
        res = self._run(argv, input=script, cwd=cwd)
        try:
            return parse_sbatch_parsable(res.stdout)
        except ParseError as exc:  # an empty or odd answer: Slurm's failure, not rtool's
            raise SlurmError(argv, str(exc), res.returncode, res.stderr) from None

    def scancel(
        self,
        job_ids: Iterable[str] = (),
        *,
        signal: str | None = None,
        batch: bool = False,
        full: bool = False,
        name: str | None = None,
        user: str | None = None,
        states: str | None = None,
    ) -> None:
        """Cancel (or signal) your jobs: by id, each checked to be yours first, or by name
        with `--user=<you>`. Another `user` raises ForeignJob."""
        ids = v.job_ids(list(job_ids))
        if not (ids or name):
            raise v.ArgvError("scancel needs job ids or a job name (refusing to guess)")
        if user is not None and owner.user_arg(user) != self.user:
            raise ForeignJob(["scancel", f"--user={user}"], f"not your jobs (you are {self.user})")
        argv = ["scancel"]
        if signal:
            argv.append(f"--signal={v.signal_name(signal)}")
        if batch:
            argv.append("--batch")
        if full:
            argv.append("--full")
        if name:
            argv += [f"--name={v.name(name, 'job name')}", f"--user={self.user}"]
        if states:
            argv.append(f"--state={v.states(states)}")
        argv.extend(ids)
        check_owner(self, ids)  # after every argument is validated, right before acting
        self._run(argv)

    def scontrol(self, *args: str) -> str:
        """Any other scontrol action (`requeue`, `hold`, `release`, `update` ...). A verb that
        acts on jobs (`JOB_VERBS`, `update jobid=...`) runs only on your own jobs."""
        checked = [v.plain(a, "scontrol argument") for a in args]
        check_owner(self, owner.acted_on(checked) or [])
        return self._run(["scontrol", *checked]).stdout

    def show_config(self) -> dict[str, str]:
        """`scontrol show config` as {key: value} (`(null)` for unset values)."""
        out = {}
        for line in self._run(["scontrol", "show", "config"]).stdout.splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() and " " not in key.strip():
                out[key.strip()] = value.strip()
        return out

    def scrontab_text(self) -> str:
        """The user's scrontab ("" when there is none); SlurmError when scrontab refuses."""
        res = self._run(["scrontab", "-l"], check=False)
        if res.returncode == 0:
            return "" if res.stdout.startswith("no crontab for") else res.stdout
        if "no crontab for" in res.stdout + res.stderr:
            return ""
        detail = (res.stderr.strip() or res.stdout.strip() or "failed").splitlines()[-1]
        raise SlurmError(["scrontab", "-l"], detail[:300], res.returncode, res.stderr)

    def scrontab_install(self, path: str) -> None:
        """Replace the user's scrontab with the file at `path` (absolute)."""
        if not path.startswith("/"):
            raise SlurmError(["scrontab", path], "the crontab file must be an absolute path")
        self._run(["scrontab", v.plain(path, "crontab file")])

    def scrontab_remove(self) -> None:
        self._run(["scrontab", "-r"])

    def requeue(self, job_id: str, *, hold: bool = False) -> None:
        self.scontrol("requeuehold" if hold else "requeue", v.job_id(job_id))

    def hold(self, job_id: str) -> None:
        self.scontrol("hold", v.job_id(job_id))

    def release(self, job_id: str) -> None:
        self.scontrol("release", v.job_id(job_id))

    def sinfo_nodes(self, *, partition: str | None = None) -> list[NodeState]:
        """Every node (one line per node and partition) with its state and Slurm's reason."""
        argv = ["sinfo", "-N", "-h", "-o", SINFO_FORMAT]
        if partition:
            argv.append(f"--partition={v.words(partition, 'partition')}")
        return parse_sinfo_nodes(self._run(argv).stdout)

    def partitions(self) -> list[str]:
        """Partition names as sinfo prints them (the default one ends in `*`)."""
        return self._run(["sinfo", "-h", "-o", "%P"]).stdout.split()

    def srun(self, args: Sequence[str], *, timeout: float) -> Result:
        """`srun ARGS` inside a job (the pre-flight step); its exit code is not checked."""
        return self._run(["srun", *args], check=False, timeout=timeout)

    def set_excluded(
        self,
        job_id: str,
        nodes: Iterable[str],
        *,
        records: list[dict[str, str]] | None = None,
    ) -> str:
        """`scontrol update jobid=ID ExcNodeList=n[1-3,7]`: the job's (an array's pending
        tasks') excluded nodes become exactly `nodes`; returns scontrol's messages, SlurmError
        when no pending job took the list. `records`: its `scontrol show job` records, read just
        before (the owner is checked on them). A running task of an array refuses and scontrol
        exits 1 on both releases, so a failure is judged by reading the pending tasks back."""
        names = [v.node(n) for n in nodes]
        argv = ["scontrol", "update", f"jobid={v.job_id(job_id)}"]
        argv.append("ExcNodeList=" + compress_hostlist(names, sort=True))
        if records:
            check_records(records, job_id, self.user)
        else:
            check_owner(self, [job_id])
        res = self._run(argv, check=False)
        text = (res.stdout + res.stderr).strip()
        if res.returncode == 0 or exclusion_applied(self.show_job(job_id), names):
            return text
        raise SlurmError(argv, f"exit code {res.returncode}", res.returncode, res.stderr)
