"""bench/scale.py's harness: the PATH-wrapped CLI runs, the queue filler, the cluster and the
in-process sweep (the measuring and the verdicts are in scale.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench import _scale_lib as lib
from bench._common import median_seconds
from devtools.localslurm import control as localslurm
from rtool.core.selfcmd import rtool_argv
from rtool.core.slurm import Slurm
from rtool.core.slurm.cmd import SLURM_ENV
from rtool.core.state import StateDir
from rtool.nodes.config import NodesConfig
from rtool.nodes.store import Evidence, EvidenceKind, SuspectStore
from rtool.watchdogs.base import ProbeEnv
from rtool.watchdogs.config import JobWatch
from rtool.watchdogs.job import JobWatchdog
from rtool.watchdogs.runner import query_for, sweep

WATCHED = [f"scale-w{i}" for i in range(20)]
#: Single held jobs up to this many queued; past it, held arrays (one sbatch per 10,000 tasks).
SINGLE_MAX = 10_000
ARRAY_MAX = 10_000


class Bench:
    """A temp folder with the PATH wrapper, the CLI's state/config dirs, and the helpers."""

    def __init__(self, base: Path, repeat: int) -> None:
        self.base, self.repeat = base, repeat
        self.log = base / "slurm-calls.log"
        self.wrappers = base / "wrappers"
        self.queued = 0
        self.floor = 0.0  # `rtool --version`: a process's start-up floor

    def env(self, logged: bool = False) -> dict[str, str]:
        # logged runs keep their own state dir: rtool remembers per sacct program whether it
        # has FailedNode, and the wrapper is another program than the real sacct
        state = self.base / ("state-logged" if logged else "state")
        env = {**os.environ, "XDG_STATE_HOME": str(state)}
        env["XDG_CONFIG_HOME"] = str(self.base / "config")
        if logged:
            env["PATH"] = f"{self.wrappers}:{env['PATH']}"
        return env

    def write_wrappers(self) -> None:
        shutil.rmtree(self.wrappers, ignore_errors=True)
        self.wrappers.mkdir()
        for name in lib.CLIENTS:
            real = shutil.which(name)
            if real:
                (self.wrappers / name).write_text(lib.wrapper_script(real, self.log))
                (self.wrappers / name).chmod(0o755)

    def rtool(self, *args: str, logged: bool = False, ok: Sequence[int] = (0, 1, 2)) -> str:
        res = subprocess.run(
            [*rtool_argv(), *args], env=self.env(logged), capture_output=True, text=True
        )
        if res.returncode not in ok or (res.returncode and args[0] not in ("watch", "nodes")):
            raise SystemExit(f"rtool {' '.join(args)}: exit {res.returncode}\n{res.stderr}")
        return res.stdout

    def calls_of(self, *args: str, ok: Sequence[int] = (0, 1, 2)) -> list[list[str]]:
        """The Slurm calls one run of `rtool ARGS` makes (logged by the PATH wrapper), after a
        first run in the same state dir (a warm state dir, as from cron)."""
        self.rtool(*args, logged=True, ok=ok)
        self.log.write_text("")
        self.rtool(*args, logged=True, ok=ok)
        return lib.parse_call_log(self.log.read_text())

    def bare(self, calls: Sequence[Sequence[str]]) -> float:
        """Median wall time of running `calls` bare, one after the other."""
        env = {**os.environ, **SLURM_ENV}

        def run() -> None:
            for argv in calls:
                subprocess.run(argv, env=env, capture_output=True, check=False)

        return median_seconds(run, self.repeat)

    def paired(self, *runs: Callable[[], object]) -> list[float]:
        """Median seconds of each of `runs`, run in turn in each of --repeat rounds (they see
        the same load: the shared host's moves within minutes)."""
        times: list[list[float]] = [[] for _ in runs]
        for _ in range(self.repeat):
            for spent, run in zip(times, runs, strict=True):
                t = time.perf_counter()
                run()
                spent.append(time.perf_counter() - t)
        return [statistics.median(t) for t in times]

    def timed(self, *args: str) -> float:
        self.rtool(*args)  # warm-up (and the state dir's first sweep)
        return median_seconds(lambda: self.rtool(*args), self.repeat)

    def fill(self, total: int) -> None:
        """Queue held jobs until `total` are queued (the 20 watched names first)."""
        names = [*WATCHED, *(f"scale-bg{i % 50}" for i in range(max(0, total - 20)))]
        todo = names[self.queued : total]
        env = {**os.environ, **SLURM_ENV}

        def submit(name: str) -> None:
            argv = ["sbatch", "--hold", "-J", name, "-o", "/dev/null", "--time=10:00"]
            subprocess.run([*argv, "--wrap", "sleep 1"], env=env, capture_output=True, check=True)

        singles = todo[: max(0, SINGLE_MAX - self.queued)]
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(submit, singles))
        left = len(todo) - len(singles)
        while left > 0:  # a held array of up to ARRAY_MAX tasks: one sbatch call
            k = min(left, ARRAY_MAX)
            argv = ["sbatch", "--hold", f"--array=0-{k - 1}", "-J", "scale-arr", "-o", "/dev/null"]
            argv += ["--time=10:00", "--wrap", "sleep 1"]
            subprocess.run(argv, env=env, capture_output=True, check=True)
            left -= k
        self.queued = max(self.queued, total)


@contextlib.contextmanager
def cluster(nodes: int, real: int) -> Iterator[localslurm.Cluster]:
    """`nodes` nodes, the first `real` of them with a slurmd each, the rest simulated."""
    directory = Path(tempfile.mkdtemp(prefix=f"rtool-bench-scale{nodes}-"))
    saved = dict(os.environ)
    t = time.perf_counter()
    slurmd, simulated = min(nodes, real), max(0, nodes - real)
    try:
        timeout = max(120.0, 3.0 * slurmd)  # 256 slurmd took up to 145 s on the shared host
        c = localslurm.up(
            directory, nodes=slurmd, simulated=simulated, accounting=True, timeout=timeout
        )
        states = lib.node_state_counts(c.env)
        for _ in range(120):  # the simulated nodes: idle once slurmctld's ping reached them
            if set(states) <= {"idle"}:
                break
            time.sleep(1)
            states = lib.node_state_counts(c.env)
        print(
            f"-- {nodes}-node cluster ({slurmd} slurmd, {simulated} simulated) with accounting "
            f"up in {time.perf_counter() - t:.1f} s; sinfo -N: {states}"
        )
        os.environ.update(c.env)
        yield c
    finally:
        os.environ.clear()
        os.environ.update(saved)
        localslurm.down(directory)
        shutil.rmtree(directory, ignore_errors=True)  # its database and spool: ~300 MB


def suspect_sweep(b: Bench, tag: str) -> tuple[float, float, dict[str, int]]:
    """(sweep s, its calls run bare s, its calls) for 20 names with 2 suspects known, after
    a first sweep that put the exclusions in place: nothing changed since."""
    state = StateDir(b.base / f"sweep-{tag}")
    now = time.time()
    for node, age in (("n5", 60), ("n9", 30)):
        SuspectStore(state).record(
            node, Evidence(EvidenceKind.PREFLIGHT, "gpus: 7 of 8", now - age)
        )
    wd = JobWatchdog([JobWatch(name=n) for n in WATCHED])
    wd.nodes_cfg = NodesConfig()
    last: list[Slurm] = []

    def one() -> None:
        s = Slurm(timeout=60)
        sweep([wd], ProbeEnv(s, state, query_for([wd])), 120)
        last[:] = [s]

    one()  # the first: excludes the suspects from the 20 pending jobs
    secs = median_seconds(one, b.repeat)
    calls = last[0].calls
    return secs, b.bare(calls), dict(lib.count_calls(calls))
