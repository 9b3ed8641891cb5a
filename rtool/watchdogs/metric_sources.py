"""The measures of each watchdog's observation (perfdata and Prometheus), attached to its results.

One function per watchdog, listed in `SOURCES`: it gets the probe output and returns
{what: measures}; `attach` puts each list on the result with the same `what`. A watchdog
without an entry has status only. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rtool.watchdogs.base import CheckResult
from rtool.watchdogs.disk import inodes, space
from rtool.watchdogs.metrics import Measure, Metric

if TYPE_CHECKING:
    from rtool.core.heartbeat import Heartbeat

ByWhat = dict[str, list[Measure]]


def disk(obs: list[Any], now: float) -> ByWhat:
    out: ByWhat = {}
    for o in obs:
        st, spec = o.statvfs, o.spec
        if not st or o.stuck or o.timed_out:
            continue
        used, free, pct = space(st, spec.usable)
        ms = [
            Measure(Metric.DISK_USED_PCT, pct, spec.warn_used, spec.max_used, 0, 100),
            Measure(Metric.DISK_USED_BYTES, used, min=0, max=used + max(free, 0)),
            Measure(Metric.DISK_FREE_BYTES, max(free, 0), crit=spec.min_free, min=0),
        ]
        ino = inodes(st)
        if ino is not None:
            ifree = ino[0]
            iused = st["files"] - st["ffree"]
            ms.append(Measure(Metric.DISK_INODES_USED, iused, min=0, max=iused + ifree))
            ms.append(Measure(Metric.DISK_INODES_FREE, ifree, crit=spec.min_free_inodes, min=0))
        out[spec.path] = ms
    return out


def log(obs: list[Any], now: float) -> ByWhat:
    out: ByWhat = {}
    for o in obs:
        ms: list[Measure] = []
        stale = float(o.spec.stale)
        if o.last_activity is not None:
            ms.append(Measure(Metric.LOG_AGE, max(0.0, now - o.last_activity), crit=stale, min=0))
        if o.heartbeat is not None:
            ms += _training(o.heartbeat, now, stale)
        if ms:
            out[o.spec.path] = ms
    return out


def _training(hb: Heartbeat, now: float, stale: float) -> list[Measure]:
    """From the shim's heartbeat: its age, the step, the step rate, the save time and age."""
    ms = [Measure(Metric.HEARTBEAT_AGE, max(0.0, now - hb.time), crit=stale, min=0)]
    if hb.step is not None:
        ms.append(Measure(Metric.TRAINING_STEP, hb.step, min=0))
    if hb.step_seconds is not None and hb.step_seconds > 0:
        ms.append(Measure(Metric.STEP_RATE, 1.0 / hb.step_seconds, min=0))
    save = hb.last_save_seconds if hb.last_save_seconds is not None else hb.longest_save_seconds
    if save is not None:
        ms.append(Measure(Metric.SAVE_SECONDS, save, min=0))
    if hb.last_save_time is not None:
        ms.append(Measure(Metric.LAST_SAVE_AGE, max(0.0, now - hb.last_save_time), min=0))
    return ms


def cron(obs: Any, now: float) -> ByWhat:
    out: ByWhat = {}
    for what, beat in (obs.heartbeats or {}).items():
        times = [beat.get(k) for k in ("time", "started")] if isinstance(beat, dict) else []
        valid = [float(t) for t in times if isinstance(t, (int, float))]
        if valid:
            out[what] = [Measure(Metric.CRON_TICK_AGE, max(0.0, now - max(valid)), min=0)]
    return out


def memory(obs: list[Any], now: float) -> ByWhat:
    for o in obs:
        if o.total:
            pct = (o.total - o.available) / o.total * 100.0
            spec = o.spec
            used = Measure(Metric.MEMORY_USED_PCT, pct, spec.warn_used, spec.max_used, 0, 100)
            return {"node": [used]}
    return {}


#: watchdog name -> measures of its probe output.
SOURCES: dict[str, Callable[[Any, float], ByWhat]] = {
    "disk": disk,
    "log": log,
    "cron": cron,
    "memory": memory,
}


def attach(name: str, output: Any, results: list[CheckResult], now: float) -> list[CheckResult]:
    """`results` with the measures of `output` (never fails the sweep: no measures then)."""
    source = SOURCES.get(name)
    if source is None:
        return results
    try:
        found = source(output, now)
    except Exception:  # a measure is a bonus; a surprise in an observation must not cost a check
        return results
    for r in results:
        if r.what in found and not r.measures:
            r.measures = list(found.pop(r.what))
    return results
