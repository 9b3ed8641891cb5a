"""memory: node RAM and swap, RSS growth of processes or a Slurm job's processes, GPU memory."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rtool.core import gpu
from rtool.core.alert import Status
from rtool.core.units import format_size
from rtool.watchdogs import history
from rtool.watchdogs.base import CheckResult, ProbeEnv, SpecWatchdog
from rtool.watchdogs.config import MemoryWatch


def _psutil() -> Any:
    """psutil, imported when memory is probed (not when the registry is loaded)."""
    import psutil

    return psutil


MiB = 1024 * 1024


@dataclass
class ProcSample:
    what: str  # `pid:123` or `job:456`
    rss: int | None
    count: int = 0
    error: str | None = None
    samples: list[dict[str, float]] = field(default_factory=list)


@dataclass
class MemoryObservation:
    spec: MemoryWatch
    total: int
    available: int
    swap_total: int
    swap_used: int
    procs: list[ProcSample] = field(default_factory=list)
    gpus: list[tuple[str, int, int]] | None = None  # (index, used MiB, total MiB)
    gpu_error: str | None = None


def job_rss(job_id: str) -> tuple[int, int]:
    """(summed RSS, process count) of this node's processes whose SLURM_JOB_ID is `job_id`."""
    total = count = 0
    for p in _psutil().process_iter():
        try:
            if p.environ().get("SLURM_JOB_ID") == job_id:
                total += p.memory_info().rss
                count += 1
        except (_psutil().Error, OSError):
            continue
    return total, count


def _proc_sample(what: str, pid: int | None, job: str | None) -> ProcSample:
    if job is not None:
        rss, count = job_rss(job)
        if count == 0:
            return ProcSample(what, None, error=f"no process of job {job} on this node")
        return ProcSample(what, rss, count)
    try:
        return ProcSample(what, _psutil().Process(pid).memory_info().rss, 1)
    except _psutil().Error:
        return ProcSample(what, None, error=f"pid {pid} is not running")


def gpu_memory(timeout: float) -> tuple[list[tuple[str, int, int]] | None, str | None]:
    """Per GPU (index, used MiB, total MiB) from nvidia-smi, or why not; (None, None) when
    there is no nvidia-smi (no GPU here: nothing to check)."""
    answer = gpu.query(["index", "memory.used", "memory.total"], timeout, units=False)
    if answer.missing or answer.error:
        return None, answer.error if not answer.missing else None
    rows = [(r[0], int(r[1]), int(r[2])) for r in answer.rows if r[1].isdigit() and r[2].isdigit()]
    return rows, None


class MemoryWatchdog(SpecWatchdog[MemoryWatch]):
    """Node RAM and swap, RSS growth of processes or a job, GPU memory.

    Example: rtool watch memory --max-used 90% --job $SLURM_JOB_ID --gpu
    """

    name = "memory"
    spec = MemoryWatch

    def targets(self) -> list[str]:
        return ["node"]

    def probe(self, env: ProbeEnv) -> list[MemoryObservation]:
        return [self._probe_one(env, spec) for spec in self.specs]

    def _probe_one(self, env: ProbeEnv, spec: MemoryWatch) -> MemoryObservation:
        vm, sw = _psutil().virtual_memory(), _psutil().swap_memory()
        o = MemoryObservation(spec, vm.total, vm.available, sw.total, sw.used)
        targets: list[tuple[str, int | None, str | None]] = [
            (f"pid:{p}", p, None) for p in spec.pids
        ]
        if spec.job:
            targets.append((f"job:{spec.job}", None, spec.job))
        now = time.time()
        for what, pid, job in targets:
            s = _proc_sample(what, pid, job)
            if s.rss is not None:
                sample = {"t": now, "rss": float(s.rss)}
                s.samples = history.append(env.state, "memory", what, sample, spec.history)
            o.procs.append(s)
        if spec.gpu:
            o.gpus, o.gpu_error = gpu_memory(self.timeout_of(spec))
        return o

    def check(self, probe_output: list[MemoryObservation], now: float) -> list[CheckResult]:
        out = []
        for o in probe_output:
            out.append(node_result(o))
            out.extend(proc_result(o, s) for s in o.procs)
            out.extend(gpu_results(o))
        return out


def _pct(used: float, total: float) -> float:
    return used / total * 100.0 if total else 0.0


def node_result(o: MemoryObservation) -> CheckResult:
    spec = o.spec
    ram = _pct(o.total - o.available, o.total)
    swap = _pct(o.swap_used, o.swap_total)
    fields = {"used_pct": f"{ram:.1f}", "available": format_size(o.available)}
    fields["swap_used_pct"] = f"{swap:.1f}"
    text = f"node {ram:.0f}% RAM used ({format_size(o.available)} available)"
    text += f", swap {swap:.0f}%" if o.swap_total else ", no swap"
    status = Status.OK
    if ram > spec.max_used:
        status, text = Status.CRITICAL, f"{text} (limit {spec.max_used:g}%)"
    elif ram > spec.warn_used:
        status, text = Status.WARNING, f"{text} (warning {spec.warn_used:g}%)"
    elif spec.max_swap_used is not None and o.swap_total and swap > spec.max_swap_used:
        status, text = Status.WARNING, f"{text} (swap limit {spec.max_swap_used:g}%)"
    return CheckResult("memory", "node", status, text, fields)


def proc_result(o: MemoryObservation, s: ProcSample) -> CheckResult:
    if s.rss is None:
        why = s.error or "no data"
        return CheckResult("memory", s.what, Status.UNKNOWN, f"{s.what}: {why}", {"error": why})
    rate = history.trend(s.samples, "rss", o.spec.trend_min_span)
    fields = {"rss": format_size(s.rss), "processes": str(s.count)}
    text = f"{s.what} RSS {format_size(s.rss)}"
    if rate is not None:
        fields["growth_per_hour"] = format_size(rate * 3600)
    if rate is not None and rate > 0:
        left = o.available / rate
        if left < o.spec.runway:
            growth = rate * 3600 / MiB
            text += f", RSS +{growth:.0f} MiB/h, ~{left / 3600:.1f} h until the node is full"
            return CheckResult("memory", s.what, Status.WARNING, text, fields)
    return CheckResult("memory", s.what, Status.OK, text, fields)


def gpu_results(o: MemoryObservation) -> list[CheckResult]:
    if o.gpu_error:
        return [CheckResult("memory", "gpu", Status.UNKNOWN, f"gpu: {o.gpu_error}")]
    out = []
    for index, used, total in o.gpus or []:
        pct = _pct(used, total)
        what = f"gpu{index}"
        text = f"{what} {pct:.0f}% memory used ({used} of {total} MiB)"
        status = Status.OK
        if pct > o.spec.gpu_max_used:
            status, text = Status.CRITICAL, f"{text} (limit {o.spec.gpu_max_used:g}%)"
        out.append(CheckResult("memory", what, status, text, {"used_pct": f"{pct:.1f}"}))
    return out
