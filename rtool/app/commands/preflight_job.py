"""The pre-flight inside a job: check every node of the allocation, keep the job off a bad node
(record it, requeue the attempt away, alert), and `rtool preflight --restart-after RC`.

`--restart-after RC`: the batch script asks before it restarts the training
in place (docs/runs.md, "Restart in place"; the decisions: rtool/nodes/restart.py).

Exit 0: restart (the restart record is written); 3: the attempt was requeued away from a bad
node; 1: do not restart (a stop, no progress, or a bad node that could not be excluded).
With spare nodes (rtool/nodes/preflight/spares.py) a bad node is replaced by a spare of the
allocation instead: exit 0 and the next launch's nodes on stdout.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import typer

from rtool.app.commands.nodes_cmd import store_of
from rtool.core.errors import RtoolError
from rtool.core.slurm.parse import ParseError, expand_hostlist
from rtool.nodes import preflight_job as job
from rtool.nodes import restart
from rtool.nodes.exclude import Cap
from rtool.nodes.preflight.base import NodeReport, Outcome
from rtool.nodes.preflight.registry import applies
from rtool.nodes.preflight.spares import Spares, launch_line
from rtool.notify.engine import process
from rtool.runs.inplace import append, read_restarts, restarts_path
from rtool.runs.logtail import read_tail

if TYPE_CHECKING:
    from rtool.app.plumbing.context import AppContext
    from rtool.nodes.preflight_job import JobInfo, JobOutcome
    from rtool.nodes.restart import Failed


def _say(text: str) -> None:
    typer.echo(f"rtool: {text}", err=True)


def restart_check(app_ctx: AppContext, node_ctx: Any, node_argv: list[str], rc: int) -> int:
    env = os.environ
    info = job.JobInfo.from_env(env)
    failed, path = _failed(info, rc)
    why = failed.stopped_on_purpose()
    if why:
        _say(f"not restarting the training in place: {why}")
        return job.FAILED
    if failed.no_progress():
        at = failed.heartbeat.step_at_start if failed.heartbeat else None
        _say(
            "not restarting the training in place again: the restarted training made no "
            f"progress (no step past {at if at is not None else 'its start'}); it would fail again"
        )
        return job.FAILED
    check = app_ctx.config.nodes.preflight.enabled and applies(node_ctx)
    bad = _bad_nodes(app_ctx, info)
    nodes = _spares(app_ctx, info, bad, node_argv if check else None) if bad else None
    if nodes is not None:  # replaced by spares, which passed the pre-flight
        lost = "; ".join(f"{n}: {why}" for n, (_, why) in bad.items())
        failed = replace(failed, node_failure=f"{lost}; relaunched on {','.join(nodes)}")
        bad, check = {}, False
    code = keep_off(app_ctx, info, _outcome(bad)) if bad else None
    if code is None and check:
        code = job_preflight(app_ctx, node_argv, app_ctx.config.nodes.preflight.timeout)
    if code not in (None, job.OK):
        return int(code)
    kind, detail = failed.cause()
    _write(env, info, failed, path)
    _say(f"restarting the training in place (launch {failed.launch + 1}) after {kind}: {detail}")
    if nodes is not None:
        typer.echo(launch_line(nodes))
    return job.OK


def _failed(info: JobInfo, rc: int) -> tuple[Failed, str | None]:
    """The launch that ended, and the restart records' path."""
    env = os.environ
    text = env.get("RTOOL_LAUNCH", "0")
    launch = int(text) if text.isdigit() else 0
    records = env.get("RTOOL_RUN_RECORDS")
    path = restarts_path(records) if records else None
    before = 0
    if path:
        key = (info.job_id, info.restarts)
        try:
            mine = [r for r in read_restarts(path) if (r.shown_id, r.restart) == key]
        except OSError:
            mine = []
        before = max((r.oom_kills or 0 for r in mine), default=0)
    hb = restart.launch_heartbeat(env.get("RTOOL_HEARTBEAT"), info, launch)
    return restart.Failed(rc, launch, hb, restart.job_oom_kills(), before), path


def _bad_nodes(app_ctx: AppContext, info: JobInfo) -> dict[str, tuple[str, str]]:
    """Nodes Slurm shows unfit or the launch's log blames: {node: (check, why)}."""
    bad: dict[str, tuple[str, str]] = {}
    try:
        states = app_ctx.slurm.sinfo_nodes()
    except RtoolError as exc:
        _say(f"warning: node states not read ({exc})")
        states = []
    for node, why in restart.bad_states(states, info.nodes).items():
        bad[node] = ("state", why)
    lines = restart.launch_log(_log_text(app_ctx, info))
    extra = app_ctx.config.runs.patterns()
    for node, why in restart.blamed_by_log(lines, info.nodes, extra).items():
        bad.setdefault(node, ("signature", why))
    return bad


def _outcome(bad: dict[str, tuple[str, str]]) -> JobOutcome:
    reports = [NodeReport(n, [Outcome(check, False, why)]) for n, (check, why) in bad.items()]
    return job.JobOutcome(reports, reports)


def _spares(
    app_ctx: AppContext, info: JobInfo, bad: dict[str, tuple[str, str]], argv: list[str] | None
) -> list[str] | None:
    """With spare nodes, the next launch's nodes: the bad ones recorded as suspects (and
    alerted on), the spares taken checked first (`argv`: the pre-flight); else None, and
    `bad` has the spares that failed their pre-flight too."""
    spares = Spares.from_env(os.environ)
    if spares is None:
        return None
    allocation = _allocation(app_ctx, info)
    checked: set[str] = set(spares.launch)
    nodes = spares.pick(allocation, bad)
    while nodes is not None and argv is not None and set(nodes) - checked:
        new = [n for n in nodes if n not in checked]
        checked |= set(new)
        timeout = app_ctx.config.nodes.preflight.timeout
        reports, error = job.run_on_nodes(
            app_ctx.slurm, replace(info, nodes=new), argv, timeout, pin=True
        )
        for r in [] if error else reports:
            _say(f"pre-flight {r.summary()} ({r.seconds:g}s)")
            if not r.ok:
                bad[r.node] = ("preflight", r.summary())
        nodes = spares.pick(allocation, bad)
    if nodes is None:
        return None
    outcome = _outcome(bad)
    taken = ",".join(n for n in nodes if n not in spares.launch) or "none"
    outcome.action = (
        f"replaced by spare node(s) {taken}: the training restarts in place on {','.join(nodes)}"
    )
    now = time.time()
    job.record(store_of(app_ctx), info, outcome.bad, now)
    why = "; ".join(w for _, w in bad.values())
    _say(f"node(s) {','.join(bad)} failed ({why}): {outcome.action}")
    _alert(app_ctx, job.alerts(info, outcome, now))
    return nodes


def _allocation(app_ctx: AppContext, info: JobInfo) -> list[str]:
    """The job's nodes now (Slurm drops a failed node from a --no-kill job), else at its start."""
    try:
        recs = app_ctx.slurm.show_job(info.job_id)
        listed = recs[0].get("NodeList", "") if recs else ""
        return expand_hostlist(listed) if listed and listed != "(null)" else info.nodes
    except (RtoolError, ParseError):
        return info.nodes


def _log_text(app_ctx: AppContext, info: JobInfo) -> str:
    """The tail of the job's output file (Slurm's StdOut), or "" when it cannot be read."""
    try:
        recs = app_ctx.slurm.show_job(info.job_id)
        path = recs[0].get("StdOut", "") if recs else ""
        return read_tail(path, int(app_ctx.config.runs.log_tail)) if path else ""
    except (RtoolError, OSError):
        return ""


def _write(env: Any, info: JobInfo, failed: Failed, path: str | None) -> None:
    if not path:
        return
    try:
        append(path, restart.record(env, info, failed, time.time(), failed.launch + 1))
    except OSError as exc:
        _say(f"warning: the restart record was not written ({exc})")


def job_preflight(app_ctx: AppContext, node_argv: list[str], timeout: float) -> int:
    info = job.JobInfo.from_env(os.environ)
    reports, error = job.run_on_nodes(app_ctx.slurm, info, node_argv, timeout)
    if error:
        _say(f"pre-flight could not run ({error}); starting the training")
        return job.OK
    outcome = job.JobOutcome(reports, [r for r in reports if not r.ok])
    for r in reports:
        _say(f"pre-flight {r.summary()} ({r.seconds:g}s)")
    if not outcome.bad:
        return job.OK
    return keep_off(app_ctx, info, outcome)


def keep_off(app_ctx: AppContext, info: Any, outcome: Any) -> int:
    """Bad nodes found: record them, requeue the attempt away from them, alert; the exit code
    (3 requeued away, 1 not)."""
    cfg = app_ctx.config.nodes
    store = store_of(app_ctx)
    now = time.time()
    job.record(store, info, outcome.bad, now)
    cap = Cap(cfg.max_excluded, cfg.min_left)
    bad = [r.node for r in outcome.bad]
    outcome.code, outcome.action = job.requeue_away(
        app_ctx.slurm, store, info, bad, cap, cfg.preflight.max_requeues
    )
    _say(f"pre-flight failed on {','.join(bad)}: {outcome.action}")
    _alert(app_ctx, job.alerts(info, outcome, now))
    return int(outcome.code)


def _alert(app_ctx: AppContext, alerts: list[Any]) -> None:
    """Hand the alerts to notify; a failing channel never hides the pre-flight's own result."""
    try:
        process(alerts, app_ctx.config.notify, app_ctx.state)
    except Exception as exc:
        _say(f"warning: pre-flight alert not sent: {exc}")
