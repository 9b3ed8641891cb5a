"""The runner: the only place with side effects. Probes run concurrently (each bounded by its
own timeout), checks are pure, then actions, status lines / JSON / tee, and notify.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rtool.core.alert import Status, worst
from rtool.core.redact import redact, redact_data
from rtool.core.safeio import UnsafeFileError, append_fd
from rtool.core.state import StateDir
from rtool.watchdogs import metric_sources, perfdata
from rtool.watchdogs.base import (
    CAUSES_FILE,
    CheckResult,
    Output,
    ProbeEnv,
    SqueueQuery,
    Watchdog,
    unknown,
)

if TYPE_CHECKING:
    from rtool.core.slurm import Slurm
    from rtool.notify.config import NotifyConfig

log = logging.getLogger(__name__)

#: Extra time a probe thread gets beyond its timeout before the runner gives up on it.
GRACE = 5.0


def query_for(watchdogs: list[Watchdog]) -> SqueueQuery | None:
    queries = [q for w in watchdogs if (q := w.squeue_query()) is not None]
    return SqueueQuery.union(queries) if queries else None


def sweep(
    watchdogs: list[Watchdog], env: ProbeEnv, timeout: float, now: float | None = None
) -> list[CheckResult]:
    """Probe every watchdog concurrently, then check each observation (pure)."""
    outputs: dict[int, Any] = {}
    errors: dict[int, BaseException] = {}

    def work(i: int, w: Watchdog) -> None:
        try:
            outputs[i] = w.probe(env)
        except Exception as exc:
            errors[i] = exc

    threads = [
        threading.Thread(target=work, args=(i, w), daemon=True, name=f"probe-{w.name}")
        for i, w in enumerate(watchdogs)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout + GRACE
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    now = time.time() if now is None else now
    results: list[CheckResult] = []
    for i, w in enumerate(watchdogs):
        if i in outputs:
            results.extend(_check(w, outputs[i], now))
        else:
            why = f"probe failed: {errors[i]}" if i in errors else "probe did not finish"
            if i in errors:
                log.debug("probe %s failed", w.name, exc_info=errors[i])
            results.extend(unknown(w.name, what, why) for what in w.targets())
    return results


def _check(w: Watchdog, output: Any, now: float) -> list[CheckResult]:
    try:
        return metric_sources.attach(w.name, output, w.check(output, now), now)
    except Exception as exc:  # a bug in one check must not hide the others
        log.debug("check %s failed", w.name, exc_info=True)
        return [unknown(w.name, what, f"check failed: {exc}") for what in w.targets()]


def exit_code(results: list[CheckResult]) -> int:
    return int(worst([r.status for r in results])) if results else int(Status.UNKNOWN)


def emit(
    results: list[CheckResult],
    out: Output,
    now: float,
    stream: TextIO,
    dry_run: list[str] | None = None,
) -> None:
    """The status lines (or JSON) on `stream`, then `--dry-run`'s lines; and the --tee file."""
    if out.json:
        doc: dict[str, Any] = {
            "status": Status(exit_code(results)).name,
            "code": exit_code(results),
            "time": now,
            "results": [r.to_json() for r in results],
        }
        if dry_run is not None:
            doc["dry_run"] = dry_run
        stream.write(json.dumps(redact_data(doc), indent=1) + "\n")
    else:  # the first status line carries every result's performance data after `|`
        lines = [perfdata.plugin_text(r.line) for r in results]
        perf = perfdata.render((r.what, m) for r in results for m in r.measures)
        if lines and perf:
            lines[0] += " | " + perf
        lines += [f"dry run: {x}" for x in dry_run or []]
        stream.writelines(redact(line) + "\n" for line in lines)
    stream.flush()
    if out.tee is not None and not out.dry_run:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now))
        try:
            with os.fdopen(append_fd(out.tee, 0o644), "a", encoding="utf-8") as fh:
                fh.writelines(f"{stamp} {redact(r.line)}\n" for r in results)
        except (OSError, UnsafeFileError) as exc:  # the verdict stays the checks' own
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            print(f"rtool: cannot append to --tee file {out.tee}: {why}", file=sys.stderr)


def notify(results: list[CheckResult], cfg: NotifyConfig, state: StateDir, now: float) -> None:
    """Hand every result (OK ones too, so notify can resolve) to notify; never fails the run."""
    try:
        from rtool.notify.engine import process
    except ImportError as exc:
        print(f"rtool: notify is not available, no alert sent ({exc})", file=sys.stderr)
        return
    try:
        process([r.to_alert(now) for r in results], cfg, state, now=now)
    except Exception as exc:
        print(redact(f"rtool: notify failed: {exc}"), file=sys.stderr)


def run_watch(
    watchdogs: list[Watchdog],
    *,
    state: StateDir,
    notify_cfg: NotifyConfig | None,
    timeout: float,
    out: Output,
    slurm: Slurm | None = None,
    stream: TextIO | None = None,
) -> int:
    """One sweep with every side effect; returns the monitoring-plugin exit code."""
    query = query_for(watchdogs)
    if out.dry_run and not getattr(slurm, "look_only", False):
        slurm = _slurm(timeout, look_only=True)  # whatever a probe asks, it only reads
    if slurm is None and query is not None:  # no Slurm layer loaded for disk/memory alone
        slurm = _slurm(timeout)
    env = ProbeEnv(slurm, state, query)
    longest = max([timeout, *[_max_timeout(w) for w in watchdogs]])
    results = sweep(watchdogs, env, longest)
    now = time.time()
    if any(r.depends for r in results) or (state.path / CAUSES_FILE).exists():
        from rtool.watchdogs.causes import add_causes  # quieting: only when it can matter

        results = add_causes(results, env, state, now)
    planned: list[str] = []
    if any(r.actions for r in results):
        from rtool.watchdogs import actions

        slurm = slurm or _slurm(timeout)
        planned = actions.apply(results, state, slurm, timeout, dry_run=out.dry_run)
    if out.dry_run:
        from rtool.watchdogs import dryrun

        send = notify_cfg if out.notify else None
        said = dryrun.report(results, planned, env.slurm, send, state, out, now)
        emit(results, out, now, stream or sys.stdout, said)
        return exit_code(results)
    emit(results, out, now, stream or sys.stdout)
    if out.notify and notify_cfg is not None:
        notify(results, notify_cfg, state, now)
    for problem in state.problems:  # reported, but the verdict stays the checks' own
        print(f"rtool: state dir problem: {problem} (verdict unchanged)", file=sys.stderr)
    if out.prom_textfile is not None:
        export_prometheus(results, state, out.prom_textfile, now)
    return exit_code(results)


def _slurm(timeout: float, *, look_only: bool = False) -> Slurm:
    from rtool.core.slurm import Slurm

    return Slurm(timeout=timeout, look_only=look_only)


def export_prometheus(
    results: list[CheckResult], state: StateDir, folder: Path, now: float
) -> None:
    """Write the textfile-collector files; a failure is reported, never fails the sweep."""
    from rtool.watchdogs import prometheus

    try:
        prometheus.write(folder, results, state, now)
    except Exception as exc:
        log.debug("prometheus textfile export failed", exc_info=True)
        print(f"rtool: cannot write Prometheus metrics to {folder}: {exc}", file=sys.stderr)


def _max_timeout(w: Watchdog) -> float:
    longest = getattr(w, "max_timeout", None)  # a stand-in without SpecWatchdog (tests) has none
    return float(longest()) if callable(longest) else 0.0
