"""Goodput of a toy training under one fault script: plain sbatch, rtool, and the ideal run.

The same training (bench/goodput_toy.py: STEPS steps of STEP_S seconds, a checkpoint every EVERY)
runs on the local 3-node Slurm with accounting, through an array of 1-minute tasks (%1), under
the same faults, injected at the same training progress:

- time-limit stops (every task ends at its 1-minute limit),
- a hang at step HANG_AT, a crash (an exception) at step CRASH_AT,
- a node failure at step NODE_AT (the node running the attempt dies; revived 20 s later).

plain: `sbatch --requeue --array`, no signal handling; a hang is found only at the time limit.
rtool: `rtool submit` with its DEFAULTS (issue #38: no tuning flag; the bench's own choices,
`--time`, `--array`, `--requeue`, `--spare-nodes 1`, and the one the first-run guide leaves to
the user, the save cadence: `--save-every auto`, the shim also saves as often as keeps the
measured save at 1% of the time): the shim stops at the time limit at
the last step boundary that leaves the learned lead (`--exit-before-end auto`), a hang is caught
in the process at the loop's own rhythm (`--hang-after auto`) and a crash or a hang is restarted
in place (`--restarts-in-place 2`); the toy saves every EVERY steps itself (the user's cadence);
the node failure kills the node the training runs on and the training restarts in place on the
spare. With `rtool watch log` (the backstop) and `rtool watch run` every 2 s. ideal: the rtool
setup with no fault but the time limits.

The queue-wait model (`--queue-wait 0,60`; bench/goodput_queue.py): every new allocation of a
run (the next array task, a requeued job) may start only that long after the run's previous
allocation ended; a restart in place keeps its allocation. Each wait runs every setup.

Printed per wait: per fault the steps done again ("redone"), the time to rtool's alert or ledger
entry, and from the last step before it to the first step after it ("to train"); per setup the
goodput = unique steps x STEP_S / allocated time (sacct) and / wall time (first start to the
end, queue included); then the targets (bench/goodput_target.py). `--plot PATH` draws steps
against time (bench/goodput_plot.py), one panel per wait.

    python bench/goodput.py --queue-wait 0,60 --plot docs/goodput.png   # ~1 h, its own cluster
    python bench/goodput.py --setups rtool,ideal                         # the fraction only
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.goodput_queue import QueueGate
from bench.goodput_report import Outcome, Step, read_steps, report, report_target, restarts
from devtools.localslurm import control
from rtool.core.slurm import Slurm, expand_hostlist

TOY = Path(__file__).resolve().parent / "goodput_toy.py"
STEPS, STEP_S, EVERY = 3000, 0.1, 100
HANG_AT, CRASH_AT, NODE_AT = 850, 1550, 2270  # not on a checkpoint boundary
TASKS = "0-19%1"
TICK = 2.0
LIMIT_S = 2400.0
SETUPS = ("plain", "rtool", "ideal")
#: The shim's hang threshold as its log states it (`hang_after 5s`): auto, from the steps.
HANG_LINE = re.compile(r"\(hang_after ([0-9]{1,6}(?:\.[0-9]{1,3})?)s\)")


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


def submit(mode: str, name: str, d: Path, cfg: Path, hold: bool) -> None:
    toy = [sys.executable, str(TOY), "--dir", str(d), "--steps", str(STEPS)]
    toy += ["--step-seconds", str(STEP_S)]
    held = ["--hold"] if hold else []  # the queue-wait model lets each attempt through
    if mode == "plain":
        script = "#!/bin/bash\nexec " + shlex.join([*toy, "--plain", "--every", str(EVERY)])
        Slurm(timeout=30).sbatch(
            [
                f"--job-name={name}",
                f"--array={TASKS}",
                "--time=1",
                "--requeue",
                f"--output={d}/%x-%A_%a.out",
                *held,
            ],
            script=script + "\n",
        )
        return
    args = shlex.join([*toy[2:], "--every", str(EVERY)])
    subprocess.run(
        [sys.executable, "-c", "import sys; from rtool.app.cli import app; app(sys.argv[1:])",
         "--config", str(cfg), "submit", str(TOY), "--job-name", name, "--array", TASKS,
         "--time", "0:01:00", "--spare-nodes", "1", "--save-every", "auto",
         "--requeue", "--heartbeat", str(d / "hb.json"), "--python", sys.executable,
         "--args", args, "--", *held],
        cwd=d, check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def running_node(slurm: Slurm, name: str) -> str | None:
    """The node the training runs on: the job's last (with a spare, rtool launches there)."""
    for j in slurm.squeue(names=[name]):
        if j.state == "RUNNING" and j.nodelist:
            return expand_hostlist(j.nodelist)[-1]
    return None


def hang_threshold(d: Path) -> float:
    """The threshold the shim used for the hang, from the job's log (0 when not found)."""
    for out in sorted(d.glob("*.out")):
        m = HANG_LINE.search(out.read_text(errors="replace"))
        if m:
            return float(m.group(1))
    return 0.0


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
    """rtool's cron-like sweep: the hang watchdog (the backstop: requeue) and the run
    watchdog (its ledger has the in-place restarts, with their causes)."""
    c = ["--config", str(cfg)]
    log = rtool_json(*c, "watch", "log", str(d / "hb.json"), "--heartbeat", str(d / "hb.json"),
                     "--stale", "20s", "--job-name", name, "--on-hang", "requeue", "--no-notify",
                     "--json")  # fmt: skip
    now = time.time()
    if log and log["status"] == "CRITICAL" and "hang" in out.faults and "hang" not in out.seen:
        out.seen["hang"] = now
    rtool_json(*c, "watch", "run", name, "--heartbeat", str(d / "hb.json"), "--log",
               f"{d}/{name}-%A_%a.out", "--no-notify", "--json")  # fmt: skip
    from rtool.core.state import StateDir
    from rtool.runs import store

    led = store.load(StateDir(d / "state"), name)
    for r in led.restarts if led else []:
        fault = {"hung": "hang", "crashed": "crash", "node_failure": "node failure"}.get(r.cause)
        if fault in out.faults:
            out.seen.setdefault(fault, now)
    for a in led.attempts if led else []:
        if a.ended is None or not a.is_over:
            continue
        if a.state == "NODE_FAIL" and "node failure" in out.faults:
            out.seen.setdefault("node failure", now)
        if a.signature and a.signature.name == "python-exception" and "crash" in out.faults:
            out.seen.setdefault("crash", now)


def run_setup(mode: str, cluster, base: Path, wait: float) -> Outcome:  # type: ignore[no-untyped-def]
    d = base / f"{mode}-{wait:g}"
    d.mkdir(parents=True)
    name = f"gp-{mode}-{uuid.uuid4().hex[:6]}"
    cfg = d / "rtool.toml"
    cfg.write_text(f"[state]\ndir = {json.dumps(str(d / 'state'))}\n")
    slurm = Slurm(timeout=30)
    out = Outcome(mode, wait, total=STEPS, step_s=STEP_S)
    gate = QueueGate(slurm, name, wait)
    submit(mode, name, d, cfg, hold=wait > 0)
    t0 = time.time()
    next_watch = 0.0
    while time.time() - t0 < LIMIT_S and not (d / "finished").exists():
        gate.tick(time.time())
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
    out.hang_after = hang_threshold(d) if mode != "plain" else 0.0
    return out


def parse_waits(text: str) -> list[float]:
    try:
        waits = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"queue waits are seconds, e.g. 0,60; got {text!r}"
        ) from None
    if not waits or any(w < 0 for w in waits):
        raise argparse.ArgumentTypeError(f"queue waits are seconds >= 0; got {text!r}")
    return waits


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
    ap.add_argument(
        "--queue-wait",
        type=parse_waits,
        default=[0.0],
        help="comma-separated queue waits in seconds, each runs every setup (default: 0)",
    )
    ap.add_argument("--plot", type=Path, help="draw steps against time into this PNG")
    ap.add_argument("--json", type=Path, help="write what was measured to this JSON file")
    args = ap.parse_args()
    # a SIGTERM (timeout, Ctrl-C from a wrapper) still stops the cluster: `finally` runs
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base = Path(tempfile.mkdtemp(prefix="rtool-goodput-"))
    cluster = control.up(base / "slurm", nodes=3, accounting=True)
    os.environ["SLURM_CONF"] = str(cluster.conf)
    panels: list[tuple[float, dict[str, Outcome]]] = []
    try:
        for wait in args.queue_wait:
            runs = {mode: run_setup(mode, cluster, base, wait) for mode in args.setups}
            panels.append((wait, runs))
            print(f"\n== queue wait {wait:g}s per new allocation ==")
            print(f"toy: {STEPS} steps of {STEP_S}s, 1-minute tasks; checkpoints every {EVERY}")
            report(runs)
            report_target(runs)
    finally:
        control.down(base / "slurm")
    if args.json:
        data = [{m: o.to_json() for m, o in runs.items()} for _, runs in panels]
        args.json.write_text(json.dumps(data))
    if args.plot:
        from bench.goodput_plot import plot

        plot(panels, args.plot)
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
