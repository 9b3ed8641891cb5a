"""checkpoint: is the run saving, is its newest checkpoint whole, will the next save fit?

The probe never touches the folder in rtool's own process: the listing (names and lstat
sizes, never a checkpoint's contents), statvfs and the heartbeat are read by
`rtool/core/ckptscan.py` in an abandonable child, and a mount whose earlier probe still hangs is
reported, not probed again (the disk watchdog's machinery, `probes/child.py`). Retention
deletes are `Action`s the runner carries out (in the same kind of child), once the checks
are done.
"""

from __future__ import annotations

import json
import os
import time

from rtool.core.alert import Status
from rtool.core.checkpoints import Ckpt, Phase, judge
from rtool.core.units import format_duration, format_size
from rtool.watchdogs.base import Action, CheckResult, ProbeEnv, SpecWatchdog
from rtool.watchdogs.checkpoint import verdict
from rtool.watchdogs.config import CheckpointWatch
from rtool.watchdogs.disk import probe_failure, read_quota
from rtool.watchdogs.history import slug
from rtool.watchdogs.probes import child

#: The newest checkpoints whose files are counted and sized (at least; keep_last adds).
DETAIL = 4


class CheckpointWatchdog(SpecWatchdog[CheckpointWatch]):
    """Is the run saving? CRITICAL when a save is overdue (from the heartbeat's pace and the
    save interval, or --max-age), when the newest checkpoint is incomplete (a file or marker
    missing, far smaller than the one before), or when the folder (or quota) will not hold
    the next save; optional retention of the last N.

    Example: rtool watch checkpoint ckpt/ --heartbeat ckpt/heartbeat.json --keep-last 3
    """

    name = "checkpoint"
    spec = CheckpointWatch

    def target(self, spec: CheckpointWatch) -> str:
        return spec.path

    def probe(self, env: ProbeEnv) -> list[verdict.Observation]:
        """One child per folder, all started at once, each bounded by its timeout; the
        quota commands run after (each bounded too)."""
        mounts = child.read_mounts()
        stuck = child.StuckProbes(env.state)
        start = time.monotonic()
        obs = [verdict.Observation(s, self.timeout_of(s), uid=os.getuid()) for s in self.specs]
        keys = [stuck.key_of(o.spec.path, mounts) for o in obs]
        hung = stuck.still_stuck([key for key, _ in keys])
        started = []
        for o, (key, point) in zip(obs, keys, strict=True):
            o.mount, o.stuck = point, hung.get(key)
            if not o.stuck:
                started.append((o, child.start("scan", _request(o.spec), script=child.CKPT_CHILD)))
        for o, proc in started:
            out = child.collect(proc, start + o.timeout)
            o.error, o.timed_out = out.error, out.timed_out
            if out.timed_out and out.pid:
                key, o.mount = child.hung_where(out, keys[obs.index(o)][0], o.mount, mounts)
                stuck.remember({key: out}, time.time(), {key: (o.spec.path, o.mount)})
            elif out.data:
                o.read(out.data)
                remember(env, o, time.time())
        for o in obs:
            if o.spec.quota_cmd and not (o.stuck or o.timed_out):
                cmd, fmt = o.spec.quota_cmd, o.spec.quota_format
                o.quota, o.quota_error = read_quota(cmd, fmt, o.timeout)
        return obs

    def check(self, probe_output: list[verdict.Observation], now: float) -> list[CheckResult]:
        return [check_one(o, now) for o in probe_output]


def remember(env: ProbeEnv, o: verdict.Observation, now: float) -> None:
    """Keep the newest complete checkpoint of the folder in the state dir (and in `o`)."""
    rel = f"watch/checkpoint/{slug(o.spec.path)}.json"
    o.remembered = Ckpt.from_state(env.state.read_json(rel, {}))
    judged = judge(o.entries, o.spec.settle, o.spec.min_size, now, o.remembered)
    newest = verdict.newest_complete(judged)
    if newest is not None and newest != o.remembered:
        env.state.write_json(rel, newest.to_state())
        o.remembered = newest


def _request(spec: CheckpointWatch) -> str:
    req = {
        "path": spec.path,
        "pattern": spec.pattern,
        "files": list(spec.files),
        "marker": spec.marker,
        "detail": max(DETAIL, (spec.keep_last or 0) + 2),
        "settle": spec.settle,
        "heartbeat": spec.heartbeat,
    }
    return json.dumps(req)


def check_one(o: verdict.Observation, now: float) -> CheckResult:
    """The verdict of one folder: the worst of overdue, incomplete and room, and retention's
    deletes as an action."""
    failed = probe_failure("checkpoint", o.spec.path, o.spec.on_timeout, o, now)
    if failed is not None:
        return failed
    spec, hb = o.spec, o.heartbeat
    judged = judge(o.entries, spec.settle, spec.min_size, now, o.remembered)
    p = verdict.pace(judged, spec, hb)
    problems = (
        verdict.incomplete(judged, now)
        + verdict.overdue(judged, spec, hb, p, now)
        + verdict.room(o, judged)
    )
    if o.heartbeat_error:
        problems.append((Status.WARNING, o.heartbeat_error))
    doomed, held = verdict.retention(o, judged)
    if held:
        problems.append((Status.WARNING, held))
    fields = _fields(o, judged, p, now)
    actions = [Action.delete(spec.path, tuple(doomed))] if doomed else []
    token = f"retention:{spec.path}:{','.join(doomed)}" if doomed else None
    if problems:
        problems.sort(key=lambda x: -x[0].severity)
        status, summary = problems[0][0], f"{spec.path}: " + "; ".join(t for _, t in problems)
    else:
        status, summary = Status.OK, _ok_text(o, judged, p, now)
    if doomed:
        shown = ", ".join(doomed[:3]) + (f" and {len(doomed) - 3} more" if len(doomed) > 3 else "")
        summary += f"; retention: {shown} to delete (keep the last {spec.keep_last})"
    return CheckResult("checkpoint", spec.path, status, summary, fields, actions, token)


def _ok_text(
    o: verdict.Observation, judged: list[verdict.Judged], p: verdict.Pace, now: float
) -> str:
    newest = verdict.newest_complete(judged)
    parts = []
    if newest is None:
        parts.append("no complete checkpoint yet")
    else:
        age = format_duration(max(0.0, now - newest.written))
        size = f"{format_size(newest.size or 0)}, " if newest.detailed else ""
        parts.append(f"newest {newest.name} ({size}{age} old), {len(judged)} checkpoint(s)")
    writing = [j.ckpt.name for j in judged if j.phase is Phase.WRITING]
    if writing:
        parts.append(f"{writing[-1]} being written")
    if o.heartbeat is not None and o.heartbeat.state not in verdict.TRAINING:
        parts.append(f"training {o.heartbeat.state.value}: no save expected")
    elif p.steps or p.seconds:
        every = f"{p.steps} steps" if p.steps else ""
        took = format_duration(p.seconds) if p.seconds else ""
        parts.append("a save every " + (f"{every} (~{took})" if every and took else every or took))
    left = verdict.saves_left(o, judged)
    if left is not None:
        parts.append(f"room for {left} more save(s)")
    return f"{o.spec.path}: " + "; ".join(parts)


def _fields(
    o: verdict.Observation, judged: list[verdict.Judged], p: verdict.Pace, now: float
) -> dict[str, str]:
    out: dict[str, str] = {"checkpoints": str(len(judged))}
    newest = verdict.newest_complete(judged)
    if newest is not None:
        out["newest"] = newest.name
        out["age"] = format_duration(max(0.0, now - newest.written))
        if newest.step is not None:
            out["step"] = str(newest.step)
        if newest.detailed:
            out["size"] = format_size(newest.size or 0)
    if p.steps:
        out["save_every"] = f"{p.steps} steps ({p.source})"
    if o.heartbeat is not None and o.heartbeat.step is not None:
        out["training_step"] = str(o.heartbeat.step)
    st = o.statvfs or {}
    if st:
        out["free"] = format_size(st.get("bavail", 0) * (st.get("frsize", 0) or 1))
    return out
