"""memory: node RAM and swap, RSS growth of processes or a Slurm job's processes, GPU memory.

A job (`--job ID`) is judged against its own memory limit where it has one: the cgroup limit
that binds its processes on this node (Slurm's task/cgroup: v2 `memory.max`, v1
`memory.limit_in_bytes`; rtool.core.cgroup), its usage as the OOM killer counts it, and an OOM
kill in its cgroup (`memory.events` / `memory.oom_control` oom_kill) is CRITICAL, named as
such. Without a cgroup limit its RSS growth is judged against the host's RAM, as before.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import psutil

from rtool.core import cgroup, gpu
from rtool.core.alert import Status
from rtool.core.units import format_size
from rtool.watchdogs import history
from rtool.watchdogs.base import CheckResult, ProbeEnv, SpecWatchdog, unknown
from rtool.watchdogs.config import MemoryWatch

MiB = 1024 * 1024


@dataclass
class ProcSample:
    what: str  # `pid:123` or `job:456`
    rss: int | None
    count: int = 0
    error: str | None = None
    samples: list[dict[str, float]] = field(default_factory=list)
    cgroup: cgroup.CgroupMemory | None = None  # a job's cgroup, when one limits it here
    oom_before: float | None = None  # OOM kills counted at the previous probe


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


def job_rss(job_id: str) -> tuple[int, int, int | None]:
    """(summed RSS, process count, one of the pids) of this node's processes whose
    SLURM_JOB_ID is `job_id`."""
    total = count = 0
    pid = None
    for p in psutil.process_iter():
        try:
            if p.environ().get("SLURM_JOB_ID") == job_id:
                total += p.memory_info().rss
                count += 1
                pid = p.pid if pid is None else pid
        except (psutil.Error, OSError):
            continue
    return total, count, pid


def _proc_sample(what: str, pid: int | None, job: str | None) -> ProcSample:
    if job is not None:
        rss, count, one = job_rss(job)
        if count == 0:
            return ProcSample(what, None, error=f"no process of job {job} on this node")
        host = psutil.virtual_memory().total
        found = cgroup.memory_of(one, host=host) if one is not None else None
        limited = found if found is not None and found.limit is not None else None
        return ProcSample(what, rss, count, cgroup=limited)
    try:
        return ProcSample(what, psutil.Process(pid).memory_info().rss, 1)
    except psutil.Error:
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
        vm, sw = psutil.virtual_memory(), psutil.swap_memory()
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
                if s.cgroup is not None and s.cgroup.oom_kills is not None:
                    sample["oom_kills"] = float(s.cgroup.oom_kills)
                s.samples = history.append(env.state, "memory", what, sample, spec.history)
                s.oom_before = _previous(s.samples, "oom_kills")
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


def _over(pct: float, text: str, limit: float, warn: float | None = None) -> tuple[Status, str]:
    """CRITICAL above `limit`, else WARNING above `warn`, naming the limit passed."""
    if pct > limit:
        return Status.CRITICAL, f"{text} (limit {limit:g}%)"
    if warn is not None and pct > warn:
        return Status.WARNING, f"{text} (warning {warn:g}%)"
    return Status.OK, text


def node_result(o: MemoryObservation) -> CheckResult:
    spec = o.spec
    ram = _pct(o.total - o.available, o.total)
    swap = _pct(o.swap_used, o.swap_total)
    fields = {"used_pct": f"{ram:.1f}", "available": format_size(o.available)}
    fields["swap_used_pct"] = f"{swap:.1f}"
    text = f"node {ram:.0f}% RAM used ({format_size(o.available)} available)"
    text += f", swap {swap:.0f}%" if o.swap_total else ", no swap"
    status, text = _over(ram, text, spec.max_used, spec.warn_used)
    swap_limit = spec.max_swap_used
    if status is Status.OK and swap_limit is not None and o.swap_total and swap > swap_limit:
        status, text = Status.WARNING, f"{text} (swap limit {swap_limit:g}%)"
    return CheckResult("memory", "node", status, text, fields)


def _previous(samples: list[dict[str, float]], key: str) -> float | None:
    """The value of `key` in the sample before the last one (None: no such sample)."""
    older = [x[key] for x in samples[:-1] if key in x]
    return older[-1] if older else None


def cgroup_result(o: MemoryObservation, s: ProcSample, cg: cgroup.CgroupMemory) -> CheckResult:
    """A job whose cgroup limits it: its usage against that limit, its OOM kills."""
    spec, limit = o.spec, cg.limit or 1
    pct = cg.usage / limit * 100.0
    fields = {
        "used_pct": f"{pct:.1f}",
        "limit": format_size(limit),
        "cgroup": cg.folder,
        "processes": str(s.count),
    }
    text = f"{s.what} {pct:.0f}% of its memory limit used ({format_size(cg.usage)} of "
    text += f"{format_size(limit)}, cgroup {cg.where})"
    kills = cg.oom_kills or 0
    if kills:
        fields["oom_kills"] = str(kills)
    new = kills - int(s.oom_before if s.oom_before is not None else 0)
    if new > 0:
        text = f"{s.what} OOM kill: {new} process(es) killed by the OOM killer at its limit "
        text += f"{format_size(limit)} (cgroup {cg.where}, memory.events oom_kill {kills})"
        return CheckResult("memory", s.what, Status.CRITICAL, text, fields)
    status, text = _over(pct, text, spec.max_used, spec.warn_used)
    return CheckResult("memory", s.what, status, text, fields)


def proc_result(o: MemoryObservation, s: ProcSample) -> CheckResult:
    if s.rss is None:
        return unknown("memory", s.what, s.error or "no data")
    if s.cgroup is not None:
        return cgroup_result(o, s, s.cgroup)
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
        status, text = _over(pct, text, o.spec.gpu_max_used)
        out.append(CheckResult("memory", what, status, text, {"used_pct": f"{pct:.1f}"}))
    return out
