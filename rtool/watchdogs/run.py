"""run: is the training run progressing across its attempts? (rtool/runs/ does the bookkeeping;
the verdicts: docs/runs.md)

Per `[[watch.run]]` entry the probe rebuilds and stores the run's attempt ledger; the check
reads it. Every non-OK result names the attempt, its nodes, state, exit code, signature and the
last lines of its log. Only your own jobs are attempts (a same-named job of another user is
neither counted nor held).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from rtool.core.alert import Cause, Status
from rtool.core.identity import is_mine
from rtool.core.proc import ProcError
from rtool.core.slurm import SqueueJob
from rtool.core.units import format_duration
from rtool.nodes.store import Evidence, EvidenceKind, SuspectStore
from rtool.runs import describe, health, straggler
from rtool.runs.config import RunsConfig, RunWatch
from rtool.runs.model import Attempt, Ledger
from rtool.runs.names import watch_base
from rtool.runs.sources import refresh  # sacct, logs and heartbeats: loaded when used
from rtool.runs.straggler import suspicions
from rtool.watchdogs.base import Action, CheckResult, ProbeEnv, SpecWatchdog, SqueueQuery
from rtool.watchdogs.job import nodes_of
from rtool.watchdogs.jobnodes import job_nodes

log = logging.getLogger(__name__)


@dataclass
class RunObservation:
    spec: RunWatch
    ledger: Ledger | None
    queue: list[SqueueJob]
    error: str | None = None
    #: the error is squeue's: slurmctld did not answer
    slurm_down: bool = False


class RunWatchdog(SpecWatchdog[RunWatch]):
    """Is the run progressing across its attempts (array tasks, requeues, chained jobs)?

    CRITICAL crash loop (and the rest of the array held), stalled, or exhausted without
    finished(); WARNING budget, restart storm, a preempted save longer than the GraceTime or
    checkpoint set aside. NAME is the run's name
    or its jobs' name; a [[watch.run]] entry of that name in the config gives the defaults,
    else what `rtool submit` recorded for the run (heartbeat, log); flags override them.

    Example: rtool watch run llama-7b --heartbeat ckpt/heartbeat.json --log 'logs/llama-%A_%a.out'
    """

    name = "run"
    spec = RunWatch
    config_entry_by = "name"
    runs_cfg = RunsConfig()
    expiry = 24 * 3600.0  # a suspect's ([nodes] expiry)

    @classmethod
    def command_base(cls, config: Any, state: Any, given: dict[str, Any]) -> dict[str, Any]:
        """The [[watch.run]] entry of that run or job name, else the recorded submission."""
        return watch_base(state, given["name"], config.watch.run)

    def configure(self, config: Any) -> RunWatchdog:
        """Reads the app config's [runs] section (failure signatures, log tail) and [nodes]
        expiry (a slow node's suspicion)."""
        if config is not None:
            self.runs_cfg, self.expiry = config.runs, config.nodes.expiry
        return self

    def target(self, spec: RunWatch) -> str:
        return spec.name

    def squeue_query(self) -> SqueueQuery | None:
        return SqueueQuery(names=frozenset(s.slurm_name for s in self.specs))

    def probe(self, env: ProbeEnv) -> list[RunObservation]:
        out = []
        try:
            jobs = env.jobs()
        except ProcError as exc:
            why = f"squeue failed: {exc}"
            return [RunObservation(s, None, [], why, slurm_down=True) for s in self.specs]
        for spec in self.specs:
            queue = [j for j in jobs if j.name == spec.slurm_name and is_mine(j.user)]
            try:
                led = refresh(
                    spec,
                    state=env.state,
                    slurm=env.slurm,
                    queue=queue,
                    now=time.time(),
                    runs_cfg=self.runs_cfg,
                )
            except (OSError, ProcError) as exc:
                out.append(RunObservation(spec, None, queue, str(exc)))
                continue
            out.append(RunObservation(spec, led, queue))
            suspect_slow(env, spec, led, self.expiry)
        return out

    def check(self, probe_output: list[RunObservation], now: float) -> list[CheckResult]:
        return [check_one(o, now) for o in probe_output]


def suspect_slow(env: ProbeEnv, spec: RunWatch, led: Ledger, expiry: float = 86400.0) -> None:
    """A node consistently the slowest in two attempts on different peers becomes a suspect
    (rtool nodes: "slow in attempts 2 and 3")."""
    found = suspicions(led.attempts, spec.slow_limits())
    if not found:
        return
    items = []
    for s in found:
        second = s.attempts[1]  # the event's time, not the observation's: suspicion expires
        when = second.ended or second.started or time.time()
        ev = Evidence(EvidenceKind.SLOW, s.detail, when, spec.name, second.job_id, s.output)
        items.append((s.node, ev))
    try:
        SuspectStore(env.state, expiry).record_many(items)
    except OSError as exc:
        log.warning("run %s: slow node not recorded as suspect: %s", spec.name, exc)


def _result(
    obs: RunObservation,
    status: Status,
    text: str,
    *,
    attempt: bool = True,
    which: Attempt | None = None,
) -> CheckResult:
    led, name = obs.ledger, obs.spec.name
    fields: dict[str, str] = {"run": name}
    if led is not None:
        fields["attempts"] = str(len(led.attempts))
        if led.best_step is not None:
            fields["step"] = str(led.best_step)
        if not led.accounting:
            fields["source"] = "degraded (no accounting)"
        shown = which or led.last
        if attempt and shown is not None:
            fields.update(describe.fields(shown))
    return CheckResult("run", name, status, f"{name} {text}", fields)


def check_one(obs: RunObservation, now: float) -> CheckResult:
    """The verdict, with the nodes (or slurmctld) a bad one may follow from: where the run
    runs now and where its last attempt ran."""
    r = _check_one(obs, now)
    if obs.slurm_down:
        r.depends = (Cause.slurmctld(),)
    elif r.status is not Status.OK:
        r.depends = nodes_of([n for j in obs.queue for n in job_nodes(j)], obs.ledger)
    return r


def _check_one(obs: RunObservation, now: float) -> CheckResult:
    spec, led = obs.spec, obs.ledger
    if obs.error is not None or led is None:
        return CheckResult("run", spec.name, Status.UNKNOWN, f"{spec.name}: {obs.error}")
    queue = health.Queue.of(obs.queue)
    if led.finished:
        step = f" at step {led.best_step}" if led.best_step is not None else ""
        return _result(
            obs, Status.OK, f"finished{step} after {len(led.attempts)} attempt(s)", attempt=False
        )
    loop = health.crash_loop(led, spec.crash_loop, spec.short)
    if loop is not None:
        return _crash_loop(obs, loop, queue)
    found = _not_moving(obs, led, queue, now)
    if found is not None:
        return found
    warning = _warning(led, spec, queue, now)
    if warning is not None:
        return _result(obs, Status.WARNING, warning)
    return _result(obs, Status.OK, _ok_text(led, queue), attempt=False)


def _not_moving(
    obs: RunObservation, led: Ledger, queue: health.Queue, now: float
) -> CheckResult | None:
    """CRITICAL: relaunches that resume at one step, no attempt left, or no step for too long."""
    spec = obs.spec
    last = f"; {describe.phrase(led.last)}" if led.last else ""
    same = health.no_progress(led, spec.no_progress)
    if same is not None:
        at, launches = same
        text = (
            f"stalled: {len(launches)} launches in a row resumed at step {at}, no checkpoint "
            f"kept in between ({', '.join(launches)})"
        )
        nums = {int(n.split()[1]) for n in launches}
        cause = health.shared_cause([a for a in led.attempts if a.number in nums and a.is_over])
        return _result(obs, Status.CRITICAL, text + (f"; {cause}" if cause else "") + last)
    if health.exhausted(led, queue):
        step = f" at step {led.best_step}" if led.best_step is not None else ""
        text = f"exhausted without finished(){step}: last {last.removeprefix('; ')}"
        return _result(obs, Status.CRITICAL, text)
    stalled = health.stalled_for(led, queue, now)
    if spec.stalled is not None and stalled is not None and stalled > spec.stalled:
        text = (
            f"stalled: highest step {led.best_step} not grown for {format_duration(stalled)} "
            f"(limit {format_duration(spec.stalled)}) over {len(led.attempts)} attempt(s)"
        )
        return _result(obs, Status.CRITICAL, text + last)
    return None


def _warning(led: Ledger, spec: RunWatch, queue: health.Queue, now: float) -> str | None:
    """WARNING: too few attempts left for the steps to go, a restart storm, an attempt's own
    warning (a save past the grace, a hang, a checkpoint set aside), or a slow run: the first
    that holds."""
    short = health.budget_short(led, queue)
    if short is not None:
        needed, can = short
        return (
            f"budget: {needed} steps to go but the remaining "
            f"{len(queue.running) + queue.pending_count} attempt(s) give ~{can:.0f} at the "
            "measured rate"
        )
    recent = health.attempts_within(led, now)
    if spec.restart_storm is not None and recent > spec.restart_storm:
        return (
            f"restart storm: {recent} attempts and in-place restarts in the last hour "
            f"(limit {spec.restart_storm})"
        )
    return _attempt_warning(led) or _slow_warning(led, spec)


def _attempt_warning(led: Ledger) -> str | None:
    """A preempted save that outlasted the GraceTime, the last attempt that ended hung (where
    its ranks were), or a checkpoint the shim set aside."""
    over = next((a for a in reversed(led.attempts) if a.save_over_grace), None)
    if over is not None and over.stop_reason == "preempted":
        return (
            f"preempted while saving: {over.save_over_grace} (attempt {over.number}); ask "
            "for a longer GraceTime or save more often (save_every) so a preemption saves"
        )
    ended = [a for a in led.attempts if a.is_over]
    if ended and ended[-1].stacks:  # a hang not restarted in place: until the next one ends
        hung = ended[-1]
        return f"attempt {hung.number} (job {hung.job_id}) hung: {hung.stacks}"
    if led.last is not None and led.last.set_aside:
        where = led.last.resumed_from or "the start (no complete checkpoint)"
        text = f"checkpoint set aside: {led.last.set_aside}; resumed from {where}"
        return f"{text} (attempt {led.last.number})"
    return None


def _slow_warning(led: Ledger, spec: RunWatch) -> str | None:
    """The step time regressed against the run's median, or a node consistently slowest, in
    the running attempt (rtool.runs.straggler)."""
    last = led.last
    if last is None or last.is_over:
        return None
    text = straggler.warning(straggler.judge(last, spec.slow_limits()))
    return f"slow: {text} (attempt {last.number})" if text else None


def _ok_text(led: Ledger, queue: health.Queue) -> str:
    step = f" at step {led.best_step}" if led.best_step is not None else ""
    if queue.running:
        where = f" on {queue.running[0].nodelist}" if queue.running[0].nodelist else ""
        now = f"running (job {queue.running[0].job_id}{where}){step}"
    elif queue.pending:
        now = f"queued ({queue.pending_count} attempt(s) left){step}"
    else:
        now = f"no attempt yet{step}"
    return f"{now}; {len(led.attempts)} attempt(s) so far"


def _crash_loop(obs: RunObservation, loop: list[health.Try], queue: health.Queue) -> CheckResult:
    spec, last = obs.spec, loop[-1]
    text = f"crash loop: {_launches(loop)} made no progress or died early; "
    if all(t.restart is None for t in loop):
        cause = health.shared_cause([t.attempt for t in loop])
        text += f"{cause}; " if cause else ""
    text += "last " + describe.phrase(last.attempt)
    if last.restart is not None:
        text += f", restarted in place after {last.restart.cause}: {last.restart.detail[:120]}"
    targets = queue.hold_targets()
    res = _result(obs, Status.CRITICAL, text, which=last.attempt)
    if spec.on_crash_loop == "hold" and targets:
        res.actions = [Action.hold(t) for t in targets]
        res.action_token = f"crashloop:{spec.name}:{last.attempt.job_id}:{last.attempt.restart}"
        if last.restart is not None:
            res.action_token += f":{last.restart.launch}"
        release = " ".join(f"scontrol release {t};" for t in targets).rstrip(";")
        res.summary += f"; holding the rest ({', '.join(targets)}); release with `{release}`"
        res.fields["release"] = release
    elif targets:
        res.summary += f"; {queue.pending_count} attempt(s) still queued"
    return res


def _launches(loop: list[health.Try]) -> str:
    """`attempts 2-3`, or the launches one by one when in-place restarts are among them."""
    if all(t.restart is None for t in loop):
        first, last = loop[0].number, loop[-1].number
        return f"attempts {first}-{last}" if len(loop) > 1 else f"attempt {first}"
    return ", ".join(t.label for t in loop)
