"""disk: space and inodes (statvfs in an abandonable child, quota commands), runway trend.

The probe never touches a watched path in rtool's own process: statvfs runs in
`probes/statfs_child.py`; a mount whose old probe still hangs is reported, not probed again.
"""

from __future__ import annotations

import shlex
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic

from rtool.core.alert import Status
from rtool.core.proc import ProcError, ProcTimeout, run
from rtool.core.units import format_duration, format_size
from rtool.watchdogs import history
from rtool.watchdogs.base import CheckResult, ProbeEnv, SpecT, SpecWatchdog, unknown
from rtool.watchdogs.config import DiskWatch
from rtool.watchdogs.probes import child

if TYPE_CHECKING:
    from rtool.watchdogs.quota import Quota


@dataclass
class Probed(Generic[SpecT]):
    """A watched folder as its probe child saw it (disk and checkpoint watchdogs): whether the
    probe answered, its statvfs, and the quota."""

    spec: SpecT
    timeout: float
    mount: str = "/"
    statvfs: dict[str, int] | None = None
    error: str | None = None
    timed_out: bool = False
    stuck: dict[str, Any] | None = None
    quota: Quota | None = None
    quota_error: str | None = None


@dataclass
class DiskObservation(Probed[DiskWatch]):
    samples: list[dict[str, float]] = field(default_factory=list)


class DiskWatchdog(SpecWatchdog[DiskWatch]):
    """Space and inodes on every partition the run needs (a hung mount never hangs rtool).

    Example: rtool watch disk /scratch /home --max-used 80% --min-free-inodes 100000 --runway 48h
    """

    name = "disk"
    spec = DiskWatch

    def target(self, spec: DiskWatch) -> str:
        return spec.path

    def probe(self, env: ProbeEnv) -> list[DiskObservation]:
        """statvfs of every path from one abandonable child (see probes/child.py), quota
        commands in threads; a mount whose earlier probe still hangs is not probed again."""
        mounts = child.read_mounts()
        stuck = child.StuckProbes(env.state)
        start = time.monotonic()
        obs = [DiskObservation(s, self.timeout_of(s)) for s in self.specs]
        keys = [stuck.key_of(o.spec.path, mounts) for o in obs]
        hung = stuck.still_stuck([key for key, _ in keys])
        for o, (key, point) in zip(obs, keys, strict=True):
            o.mount, o.stuck = point, hung.get(key)
        quota_threads = [_start_quota(o) for o in obs]
        todo = [i for i, o in enumerate(obs) if not o.stuck]
        outcomes = child.statvfs_all(
            [obs[i].spec.path for i in todo], [start + obs[i].timeout for i in todo]
        )
        timed_out, where = {}, {}
        for i, out in zip(todo, outcomes, strict=True):
            o = obs[i]
            o.error, o.timed_out = out.error, out.timed_out
            if out.timed_out:
                key, o.mount = child.hung_where(out, keys[i][0], o.mount, mounts)
                timed_out[key], where[key] = out, (o.spec.path, o.mount)
            elif out.data:
                o.statvfs = out.data["statvfs"]
        if timed_out:
            stuck.remember(timed_out, time.time(), where)
        _record(env, [o for o in obs if o.statvfs is not None])
        for t in quota_threads:
            if t is not None:
                t.join()
        return obs

    def check(self, probe_output: list[DiskObservation], now: float) -> list[CheckResult]:
        return [check_one(o, now) for o in probe_output]


def _start_quota(o: DiskObservation) -> threading.Thread | None:
    if not o.spec.quota_cmd:
        return None
    t = threading.Thread(target=_run_quota, args=(o,), daemon=True)
    t.start()
    return t


def _run_quota(o: DiskObservation) -> None:
    o.quota, o.quota_error = read_quota(o.spec.quota_cmd, o.spec.quota_format, o.timeout)


def read_quota(
    cmd: list[str] | str | None, fmt: str, timeout: float
) -> tuple[Quota | None, str | None]:
    """(the quota, None) or (None, why not): the command run with `timeout`, its output
    parsed as `fmt` (also used by the checkpoint watchdog)."""
    from rtool.watchdogs.quota import QuotaParseError, parse_quota

    res = None
    try:
        argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd or [])
        res = run(argv, timeout=timeout, check=False, max_output=1024 * 1024)
        return parse_quota(fmt, res.stdout), None
    except ProcTimeout:
        return None, f"quota command timed out after {timeout:g}s"
    except ProcError as exc:
        return None, str(exc)
    except QuotaParseError as exc:
        if res is not None and res.returncode != 0:  # a failed command: say so, with its words
            said = (res.stderr.strip().splitlines() or ["no message"])[-1][:200]
            return None, f"quota command exited {res.returncode}: {said}"
        return None, f"cannot read quota output: {exc}"
    except ValueError as exc:  # shlex: an unclosed quote
        return None, f"quota command {cmd!r} cannot be split: {exc}"


def _record(env: ProbeEnv, probed: list[DiskObservation]) -> None:
    """Append each probed path's usage to its history (one lock for all) and keep the samples."""
    now, items = time.time(), []
    for o in probed:
        used, free = space(o.statvfs or {}, o.spec.usable)[:2]
        items.append((o.spec.path, {"t": now, "used": float(used), "free": float(free)}))
    windows = {o.spec.path: o.spec.history for o in probed}
    kept = history.append_many(env.state, "disk", items, windows)
    for o in probed:
        o.samples = kept.get(o.spec.path, [])


def space(st: dict[str, int], usable: float) -> tuple[int, int, float]:
    """(used bytes, free bytes, used %) with `f_bavail` as free and `usable`% as 100%."""
    frsize = st.get("frsize", 0) or 1
    used = (st["blocks"] - st["bfree"]) * frsize
    capacity = (used + st["bavail"] * frsize) * usable / 100.0
    pct = used / capacity * 100.0 if capacity > 0 else 0.0
    return used, int(capacity - used), pct


def inodes(st: dict[str, int]) -> tuple[int, float] | None:
    """(free inodes, used %) or None when the filesystem reports no inode counts."""
    if not st.get("files"):
        return None
    used = st["files"] - st["ffree"]
    total = used + st["favail"]
    return st["favail"], (used / total * 100.0 if total else 0.0)


Problem = tuple[Status, str]


def _space_problems(spec: DiskWatch, st: dict[str, int]) -> list[Problem]:
    _, free, pct = space(st, spec.usable)
    out: list[Problem] = []
    if spec.max_used is not None and pct > spec.max_used:
        out.append((Status.CRITICAL, f"{pct:.0f}% used (limit {spec.max_used:g}%)"))
    elif spec.warn_used is not None and pct > spec.warn_used:
        out.append((Status.WARNING, f"{pct:.0f}% used (warning {spec.warn_used:g}%)"))
    if spec.min_free is not None and free < spec.min_free:
        text = f"{format_size(max(free, 0))} free (minimum {format_size(spec.min_free)})"
        out.append((Status.CRITICAL, text))
    ino = inodes(st)
    if ino is not None:
        ifree, ipct = ino
        if spec.max_inodes_used is not None and ipct > spec.max_inodes_used:
            text = f"{ipct:.0f}% inodes used (limit {spec.max_inodes_used:g}%)"
            out.append((Status.CRITICAL, text))
        if spec.min_free_inodes is not None and ifree < spec.min_free_inodes:
            out.append((Status.CRITICAL, f"{ifree} inodes free (minimum {spec.min_free_inodes})"))
    return out


def _quota_problems(o: DiskObservation) -> list[Problem]:
    spec, q = o.spec, o.quota
    if o.quota_error:
        return [(Status[spec.quota_on_failure.upper()], f"quota: {o.quota_error}")]
    if q is None:
        return []
    out: list[Problem] = []
    if q.limit:
        pct = q.used / q.limit * 100.0
        if q.used >= q.limit or (spec.max_used is not None and pct > spec.max_used):
            text = f"quota {pct:.0f}% used ({format_size(q.used)} of {format_size(q.limit)})"
            out.append((Status.CRITICAL, text))
    if q.files_limit and q.files is not None:
        ipct = q.files / q.files_limit * 100.0
        limit = spec.max_inodes_used
        if q.files >= q.files_limit or (limit is not None and ipct > limit):
            text = f"file quota {ipct:.0f}% used ({q.files} of {q.files_limit})"
            out.append((Status.CRITICAL, text))
    if q.over and not out:
        out.append((Status.CRITICAL, "over quota (flagged by the quota tool)"))
    return out


def _runway_problem(o: DiskObservation, free: int) -> list[Problem]:
    spec = o.spec
    if spec.runway is None:
        return []
    rate = history.trend(o.samples, "used", spec.trend_min_span)
    if rate is None or rate <= 0:
        return []
    left = max(free, 0) / rate
    if left >= spec.runway:
        return []
    return [(Status.WARNING, f"full in ~{left / 3600:.0f} h at {format_size(rate * 86400)}/day")]


def probe_failure(
    kind: str, path: str, on_timeout: str, o: Probed[Any], now: float
) -> CheckResult | None:
    """The verdict on a folder whose probe child did not answer (disk and checkpoint watchdogs):
    still hung from an earlier sweep, timed out now, or failed; None when the probe answered.
    `on_timeout` (warning, critical...) is the status of a probe that hung."""
    bad = Status[on_timeout.upper()]
    if o.stuck:
        ago = format_duration(now - float(o.stuck.get("since", now)))
        pid = o.stuck.get("pid")
        text = f"{path} probe still hung since {ago} ago (pid {pid}), not probed again"
        return CheckResult(kind, path, bad, text, {"mount": o.mount, "error": "stuck"})
    if o.timed_out:
        text = f"{path} probe timed out after {o.timeout:g}s (mount {o.mount} hung?)"
        return CheckResult(kind, path, bad, text, {"mount": o.mount, "error": "timeout"})
    if o.error or o.statvfs is None:
        return unknown(kind, path, o.error or "no data")
    return None


def check_one(o: DiskObservation, now: float) -> CheckResult:
    failed = probe_failure("disk", o.spec.path, o.spec.on_timeout, o, now)
    if failed is not None:
        return failed
    spec, st = o.spec, o.statvfs or {}
    free, pct = space(st, spec.usable)[1:]
    problems = _space_problems(spec, st) + _quota_problems(o) + _runway_problem(o, free)
    ino = inodes(st)
    fields = {"mount": o.mount, "used_pct": f"{pct:.1f}", "free": format_size(max(free, 0))}
    if ino is not None:
        fields["inodes_used_pct"] = f"{ino[1]:.1f}"
    if spec.max_used is not None:
        fields["limit"] = f"{spec.max_used:g}%"
    if problems:
        problems.sort(key=lambda p: -p[0].severity)
        summary = f"{spec.path} " + "; ".join(text for _, text in problems)
        return CheckResult("disk", spec.path, problems[0][0], summary, fields)
    inode_text = f", {ino[1]:.0f}% inodes used" if ino else ", inodes not reported"
    summary = f"{spec.path} {pct:.0f}% used, {format_size(max(free, 0))} free{inode_text}"
    return CheckResult("disk", spec.path, Status.OK, summary, fields)
