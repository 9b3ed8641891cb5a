"""Goodput of a toy training under one fault script, with rtool and with the plain setup.

The same training (bench/goodput_toy.py: STEPS steps of STEP_S seconds) runs on the local
3-node Slurm with accounting, through an array of 1-minute tasks (%1), under the same faults,
injected at the same training progress:

- time-limit stops (every task ends at its 1-minute limit),
- a hang at step HANG_AT, a crash (an exception) at step CRASH_AT,
- a node failure at step NODE_AT (the node running the attempt dies; revived 20 s later).

plain: `sbatch --requeue --array`, a checkpoint every EVERY steps, no signal handling; a hang is
found only at the time limit. rtool: `rtool submit` (shim: saves at the time limit, on the
signal, on requeue), `rtool watch log --on-hang requeue` and `rtool watch run` every 2 s (a
cron-like loop). Printed side by side: steps lost, time from each fault to rtool's alert (or
its ledger showing the attempt) and to training again, and goodput = unique steps × STEP_S /
allocated time (sacct's elapsed of every attempt until the training finished).

A third setup, ideal, is the rtool one with no fault but the time-limit restarts (the same task
time limits): its goodput is the ideal-achievable one, and its attempts give the start-up
latency (sacct Start to the first step). Printed last, the target of issue #14
(bench/goodput_target.py): rtool's goodput as a fraction of the ideal (>= 0.9), and each fault's
time back to training minus the start-up latency (<= 5 s).

    python bench/goodput.py                        # ~18 min; its own 3-node Slurm with accounting
    python bench/goodput.py --setups rtool,ideal   # the target only (~11 min)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.goodput_target import (
    Latency,
    first_step_times,
    fraction_line,
    goodput,
    startup_latencies,
    target_lines,
)
from rtool.core.slurm import Slurm
from rtool.testing import localslurm

TOY = Path(__file__).resolve().parent / "goodput_toy.py"
STEPS, STEP_S, EVERY = 3000, 0.1, 100
HANG_AT, CRASH_AT, NODE_AT = 850, 1550, 2270  # not on a checkpoint boundary
TASKS = "0-19%1"
TICK = 2.0
LIMIT_S = 1200.0
SETUPS = ("plain", "rtool", "ideal")
FAULTS = ("hang", "crash", "node failure")


@dataclass
class Step:
    step: int
    t: float
    pid: int


@dataclass
class Outcome:
    mode: str
    faults: dict[str, float] = field(default_factory=dict)  # fault -> time injected
    seen: dict[str, float] = field(default_factory=dict)  # fault -> time rtool reported it
    steps: list[Step] = field(default_factory=list)
    allocated: float = 0.0
    finished_at: float | None = None
    restarts: list[tuple[str, int, float]] = field(default_factory=list)  # cause, lost, gap
    revive: dict[str, float] = field(default_factory=dict)  # failed node -> when to revive
    starts: list[float] = field(default_factory=list)  # sacct Start of every attempt

    @property
    def goodput(self) -> float | None:
        return goodput(len({s.step for s in self.steps}), STEP_S, self.allocated)


def read_steps(path: Path) -> list[Step]:
    out = []
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text().splitlines():
            parts = dict(p.split("=", 1) for p in line.split() if "=" in p)
            with contextlib.suppress(KeyError, ValueError):
                out.append(Step(int(parts["step"]), float(parts["t"]), int(parts["pid"])))
    return out


def rtool_json(*args: str) -> dict | None:  # type: ignore[type-arg]
    """Run the rtool CLI in-process; its --json output."""
    from rtool.app.cli import main

    buf = io.StringIO()
    quiet = io.StringIO()
    with (
        contextlib.redirect_stdout(buf),
        contextlib.redirect_stderr(quiet),
        contextlib.suppress(SystemExit),
    ):
        main(list(args))
    with contextlib.suppress(ValueError):
        return json.loads(buf.getvalue())
    return None


def submit(mode: str, name: str, d: Path, cfg: Path) -> None:
    toy = [sys.executable, str(TOY), "--dir", str(d), "--steps", str(STEPS)]
    toy += ["--step-seconds", str(STEP_S)]
    if mode == "plain":
        script = "#!/bin/bash\nexec " + shlex.join([*toy, "--plain", "--every", str(EVERY)])
        Slurm(timeout=30).sbatch(
            [
                f"--job-name={name}",
                f"--array={TASKS}",
                "--time=1",
                "--requeue",
                f"--output={d}/%x-%A_%a.out",
            ],
            script=script + "\n",
        )
        return
    args = shlex.join([*toy[2:], "--every", str(EVERY)])
    subprocess.run(
        [sys.executable, "-c", "import sys; from rtool.app.cli import app; app(sys.argv[1:])",
         "--config", str(cfg), "submit", str(TOY), "--job-name", name, "--array", TASKS,
         "--time", "0:01:00", "--signal", "B:USR1@30", "--exit-before-end", "3s",
         "--requeue", "--heartbeat", str(d / "hb.json"), "--python", sys.executable,
         "--args", args],
        cwd=d, check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    del args


def running_node(slurm: Slurm, name: str) -> str | None:
    for j in slurm.squeue(names=[name]):
        if j.state == "RUNNING" and j.nodelist:
            return j.nodelist
    return None


def inject(out: Outcome, d: Path, steps: list[Step], slurm: Slurm, cluster, name: str) -> None:  # type: ignore[no-untyped-def]
    top = max((s.step for s in steps), default=-1)
    now = time.time()
    if top >= HANG_AT and "hang" not in out.faults:
        (d / "hang").touch()
        out.faults["hang"] = now
    elif top >= CRASH_AT and "crash" not in out.faults:
        (d / "crash").touch()
        out.faults["crash"] = now
    elif top >= NODE_AT and "node failure" not in out.faults:
        node = running_node(slurm, name)
        if node:
            cluster.fail_node(node)
            out.faults["node failure"] = now
            out.revive[node] = now + 20


def watch(out: Outcome, d: Path, name: str, cfg: Path) -> None:
    """rtool's cron-like sweep: the hang watchdog (requeue) and the run watchdog."""
    c = ["--config", str(cfg)]
    log = rtool_json(*c, "watch", "log", str(d / "hb.json"), "--heartbeat", str(d / "hb.json"),
                     "--stale", "8s", "--job-name", name, "--on-hang", "requeue", "--no-notify",
                     "--json")  # fmt: skip
    now = time.time()
    if log and log["status"] == "CRITICAL" and "hang" in out.faults and "hang" not in out.seen:
        out.seen["hang"] = now
    rtool_json(*c, "watch", "run", name, "--heartbeat", str(d / "hb.json"), "--log",
               f"{d}/{name}-%A_%a.out", "--no-notify", "--json")  # fmt: skip
    from rtool.core.state import StateDir
    from rtool.runs import store

    led = store.load(StateDir(d / "state"), name)
    for a in led.attempts if led else []:
        if a.ended is None or not a.is_over:
            continue
        if a.state == "NODE_FAIL" and "node failure" in out.faults:
            out.seen.setdefault("node failure", now)
        if a.signature and a.signature.name == "python-exception" and "crash" in out.faults:
            out.seen.setdefault("crash", now)


def run_setup(mode: str, cluster, base: Path) -> Outcome:  # type: ignore[no-untyped-def]
    d = base / mode
    d.mkdir(parents=True)
    name = f"gp-{mode}-{uuid.uuid4().hex[:6]}"
    cfg = d / "rtool.toml"
    cfg.write_text(f"[state]\ndir = {json.dumps(str(d / 'state'))}\n")
    slurm = Slurm(timeout=30)
    out = Outcome(mode)
    submit(mode, name, d, cfg)
    t0 = time.time()
    next_watch = 0.0
    while time.time() - t0 < LIMIT_S and not (d / "finished").exists():
        if mode != "ideal":
            inject(out, d, read_steps(d / "steps.log"), slurm, cluster, name)
        for node, when in list(out.revive.items()):
            if time.time() >= when:
                cluster.revive_node(node)
                del out.revive[node]
        if mode != "plain" and time.time() >= next_watch:
            next_watch = time.time() + TICK
            watch(out, d, name, cfg)
        time.sleep(0.5)
    out.finished_at = time.time() if (d / "finished").exists() else None
    for node in out.revive:
        cluster.revive_node(node)
    slurm.scancel(name=name)
    time.sleep(3)
    out.steps = read_steps(d / "steps.log")
    end = out.finished_at or time.time()
    recs = slurm.sacct(names=[name], since=t0 - 60)
    out.allocated = sum(
        min(r.start + (r.elapsed_s if r.elapsed_s is not None else end), r.end or end, end)
        - r.start
        for r in recs
        if r.start is not None and r.start < end
    )
    out.starts = [r.start for r in recs if r.start is not None and r.start < end]
    out.restarts = restarts(out)
    return out


def restarts(out: Outcome) -> list[tuple[str, int, float]]:
    """(cause, steps lost, seconds from the last step to training again) per process change."""
    res = []
    for prev, nxt in zip(out.steps, out.steps[1:], strict=False):
        if prev.pid == nxt.pid:
            continue
        cause = next((f for f, t in out.faults.items() if prev.t - 1 <= t <= nxt.t), "time limit")
        res.append((cause, max(0, prev.step - nxt.step + 1), nxt.t - prev.t))
    return res


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}s"


def row(o: Outcome, cause: str, i: int) -> str:
    hits = [r for r in o.restarts if r[0] == cause]
    if i >= len(hits):
        return f"{'':>6} {'':>9} {'':>9}"
    _, lost, gap = hits[i]
    t = o.faults.get(cause)
    alert = o.seen.get(cause)
    to_alert = fmt(alert - t) if alert and t else "-"
    return f"{lost:>6} {to_alert:>9} {fmt(gap):>9}"


def report(runs: dict[str, Outcome]) -> None:
    """The side-by-side table, one summary line per setup, the ratio to plain."""
    outs = list(runs.values())
    print(f"{'fault':<16} | " + " | ".join(
        f"{o.mode + ': lost':>6} {'to alert':>9} {'to train':>9}" for o in outs))  # fmt: skip
    for cause in ("time limit", *FAULTS):
        n = max(sum(r[0] == cause for r in o.restarts) for o in outs)
        for i in range(max(n, 1)):
            label = f"{cause} #{i + 1}" if n > 1 else cause
            print(f"{label:<16} | " + "      | ".join(row(o, cause, i) for o in outs))
    for o in outs:
        uniq = len({s.step for s in o.steps})
        lost = len(o.steps) - uniq
        good = f"{o.goodput:.3f}" if o.goodput is not None else "-"
        wall = (o.finished_at - o.steps[0].t) if o.finished_at and o.steps else float("nan")
        print(
            f"{o.mode:>6}: {uniq}/{STEPS} steps, {lost} done twice, {len(o.restarts)} restarts, "
            f"allocated {o.allocated:.0f}s, wall {wall:.0f}s, goodput {good}"
        )
    plain, rt = runs.get("plain"), runs.get("rtool")
    if plain and rt and plain.goodput and rt.goodput:
        print(f"goodput ratio rtool/plain: {rt.goodput / plain.goodput:.2f}")


def report_target(runs: dict[str, Outcome]) -> None:
    """Issue #14's target: rtool vs the ideal run, each fault vs the start-up latency."""
    rt, ideal = runs.get("rtool"), runs.get("ideal")
    latency = Latency(())
    if ideal:
        firsts = first_step_times((s.t, s.pid) for s in ideal.steps)
        latency = startup_latencies(ideal.starts, firsts)
    print(fraction_line(rt.goodput if rt else None, ideal.goodput if ideal else None))
    gaps = [(cause, gap) for cause, _, gap in rt.restarts if cause in FAULTS] if rt else []
    missing = [f for f in FAULTS if rt and f not in {g[0] for g in gaps}]
    for line in target_lines(gaps, latency):
        print(line)
    if missing:
        print(f"  not back to training (no restart seen): {', '.join(missing)}")


def parse_setups(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in SETUPS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"setups are {','.join(SETUPS)}; got {text!r}")
    return [n for n in SETUPS if n in names]  # run in the fixed order


def main() -> int:
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(
        description=doc.splitlines()[0],
        epilog="The fault script is fixed (see the module docstring).",
    )
    ap.add_argument(
        "--setups",
        type=parse_setups,
        default=list(SETUPS),
        help="comma-separated subset of plain,rtool,ideal (default: all three)",
    )
    setups: list[str] = ap.parse_args().setups
    # a SIGTERM (timeout, Ctrl-C from a wrapper) still stops the cluster: `finally` runs
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base = Path(tempfile.mkdtemp(prefix="rtool-goodput-"))
    cluster = localslurm.up(base / "slurm", nodes=3, accounting=True)
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        runs = {mode: run_setup(mode, cluster, base) for mode in setups}
    finally:
        localslurm.down(base / "slurm")
    print(f"toy: {STEPS} steps of {STEP_S}s, 1-minute tasks; plain checkpoints every {EVERY}")
    report(runs)
    report_target(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
