"""Benchmark of `rtool status` (what one look at the screen costs).

    python bench/status_bench.py [--repeat 7]

Measures, in the same run:
  baseline  one bare `squeue` call (the irreducible cost of asking Slurm anything)
  gather    status_view.gather in-process: 1 and 20 watched jobs, a started cron chain,
            20 open alerts, 5 disk histories, 2 switch files: median wall time, squeue calls
  cli       `rtool status --json` as a new process, against `rtool config check` (the same
            Python start-up and config load, nothing else)
Uses $SLURM_CONF when set, else starts a local Slurm in a temp folder (and stops it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import median_seconds, slurm_conf  # noqa: E402
from rtool.app.plumbing.appconfig import load_config  # noqa: E402
from rtool.app.status.view import gather  # noqa: E402
from rtool.core.alert import Alert, Status  # noqa: E402
from rtool.core.proc import run  # noqa: E402
from rtool.core.slurm import Slurm  # noqa: E402
from rtool.core.state import StateDir  # noqa: E402
from rtool.cron.store import CronStore  # noqa: E402
from rtool.watchdogs import history  # noqa: E402


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm up
    return median_seconds(fn, repeat) * 1000


def make_config(base: Path, jobs: int) -> Path:
    names = "".join(f'[[watch.job]]\nname = "bench-{i}"\n' for i in range(jobs))
    cfg = base / f"rtool-{jobs}.toml"
    cfg.write_text(
        f'[state]\ndir = "{base / "state"}"\n[cron]\ndir = "{base / "cron"}"\n'
        f'[notify.log]\npath = "{base / "alerts.log"}"\n{names}'
    )
    return cfg


def fill_state(cfg_path: Path) -> None:
    """Real state written by the real code paths: alerts, disk histories, a cron heartbeat."""
    from rtool.notify.engine import process

    cfg = load_config(cfg_path)
    state = StateDir(cfg.state.dir)
    now = time.time()
    alerts = [Alert(f"disk:/p{i}", Status.CRITICAL, f"/p{i} 91% used", {}, now) for i in range(20)]
    process(alerts, cfg.notify, state, now=now)
    for i in range(5):
        for k in range(50):
            sample = {"t": now - 3600 + k * 60, "used": 1e9 + k * 1e7, "free": 5e9 - k * 1e7}
            history.append(state, "disk", f"/p{i}", sample, 7 * 86400)
    root = Path(cfg.cron.dir).resolve()
    CronStore(state, root).write_heartbeat({"time": now, "next_slot": now + 3600, "started": now})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    with slurm_conf(), tempfile.TemporaryDirectory(prefix="rtool-bench-status-") as tmp:
        base = Path(tmp)
        (base / "cron").mkdir()
        os.chdir(base)
        base_ms = median_ms(lambda: run(["squeue", "-h"], timeout=30), args.repeat)
        print(f"machine: {os.cpu_count()} CPUs, {sys.platform}, Python {sys.version.split()[0]}")
        print(f"baseline: 1 bare squeue                      {base_ms:7.1f} ms")
        for jobs in (1, 20):
            cfg_path = make_config(base, jobs)
            fill_state(cfg_path)
            cfg = load_config(cfg_path)
            state = StateDir(cfg.state.dir)
            slurm = Slurm(timeout=30)
            ms = median_ms(lambda: gather(cfg, state, slurm, cwd=base), args.repeat)  # noqa: B023
            slurm.calls.clear()
            data = gather(cfg, state, slurm, cwd=base)
            calls = sum(1 for c in slurm.calls if c[0] == "squeue")
            assert len(data["alerts"]["open"]) == 20 and len(data["disks"]) == 5
            print(
                f"gather: {jobs:2d} watched job(s), 20 alerts, 5 disks  {ms:7.1f} ms  "
                f"({ms / base_ms:.1f}x baseline), squeue calls: {calls}"
            )
        entry = "import sys; from rtool.app.cli import app; app(sys.argv[1:])"
        cli = [sys.executable, "-c", entry, "--config", str(cfg_path), "status", "--json"]
        check = [*cli[:-2], "config", "check"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}

        def spawn(argv: list[str]) -> Callable[[], object]:
            return lambda: subprocess.run(argv, check=True, capture_output=True, env=env)

        start_ms = median_ms(spawn(check), args.repeat)
        ms = median_ms(spawn(cli), args.repeat)
        print(f"cli baseline: rtool config check (new process) {start_ms:7.1f} ms")
        print(
            f"cli: rtool status --json, 20 jobs (new process) {ms:7.1f} ms  "
            f"({ms / start_ms:.2f}x config check)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
