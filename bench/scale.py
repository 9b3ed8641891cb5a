"""Benchmark at scale: rtool's Slurm reads side by side with the bare Slurm calls they make.

    python bench/scale.py [--quick] [--repeat 5] [--png docs/scale.png]

Starts real local Slurm clusters with accounting (devtools.localslurm.control) of 16, 32 and 64
nodes, in turn, and measures in the same run (medians of --repeat runs, whole processes):
  nodes     per cluster size, 20 watched names + 1,000 queued jobs: one in-process sweep of
            `watch job` for the 20 names with suspects known (nothing changed since the last
            sweep) against the same Slurm calls run bare; `rtool nodes --json` against
            start-up + its Slurm calls run bare
  queue     on the largest cluster, 1,000 / 5,000 / 10,000 queued jobs (held single jobs, one
            `sbatch --hold` each, so squeue and `squeue -r` both list every one): the CLI
            `rtool watch job` for 20 names against start-up (a rejected `--timeout`) + its squeue
            run bare (start-up and both `watch job` runs timed in turn, round after round, right
            after the queue is filled); `squeue -r` of all jobs; the in-process sweep as above
  attempts  `rtool history RUN --no-accounting` of a run whose batch-script records hold
            50 / 200 / 500 attempts, against start-up + its squeue run bare
Slurm calls are counted by a PATH wrapper that logs each call (the CLI) and by `Slurm.calls`
(in-process). Prints each figure, its ratio, PASS/FAIL per goal of issues #31 and #38, and draws
the cost curves into --png. --quick: 16/32 nodes, 500/1,000/2,000 jobs, 20/50/100 attempts.

Issue #38's sizes: `--nodes 64,1000 --jobs 1000,10000,100000 --attempts 100,1000` (any lists).
Past --real-nodes (default 256, one slurmd each) nodes are simulated: in slurm.conf with the
first node's port, so its slurmd answers their pings and sinfo/squeue show them idle (the
queue is held: nothing runs there).
Past 10,000 the queue is filled with held arrays of up to 10,000 tasks (`sbatch --hold
--array`, one call each: MaxArraySize is 10,001): `squeue` shows such an array as one line
until its tasks run, `squeue -r` lists every task. `watch job` is timed for 1 and 20 names; the
history goal also checks that every attempt is listed (the oldest compacted).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import _scale_lib as lib  # noqa: E402
from bench._common import median_seconds  # noqa: E402
from bench._scale_plot import Axis, draw  # noqa: E402
from bench._scale_run import WATCHED, Bench, cluster, suspect_sweep  # noqa: E402
from devtools.localslurm.slurmconf import MAX_NODES  # noqa: E402

FULL = {"nodes": [16, 32, 64], "jobs": [1000, 5000, 10000], "attempts": [50, 200, 500]}
QUICK = {"nodes": [16, 32], "jobs": [500, 1000, 2000], "attempts": [20, 50, 100]}
WATCH = ["watch", "job", *(a for n in WATCHED for a in ("--name", n)), "--no-notify"]
WATCH1 = ["watch", "job", "--name", WATCHED[0], "--no-notify"]
#: `watch job` for 20 names with a rejected --timeout: its start-up, no Slurm call
BAD = [a if a != "--no-notify" else "--timeout=bogus" for a in WATCH] + ["--no-notify"]
WATCH1_CLI = "rtool watch job (1 name)"
FLOOR = "rtool --version"
STARTUP = "start-up (watch job)"
START_SQ = "start-up + its squeue bare"
WATCH_CLI = "rtool watch job (20 names)"
SQUEUE_ALL = "squeue -r (all jobs)"
SWEEP = "in-process sweep"
SWEEP_BARE = "the sweep's calls bare"


def nodes_axis(b: Bench, n: int, fill: int, out: dict[str, list[float]]) -> list[str]:
    b.fill(fill)
    sw, sw_bare, calls = suspect_sweep(b, f"nodes{n}")
    nodes_calls = b.calls_of("nodes", "--json")
    cli, cli_bare = b.timed("nodes", "--json"), b.bare(nodes_calls)
    floor = out[FLOOR][-1]
    for key, v in (
        (SWEEP, sw),
        (SWEEP_BARE, sw_bare),
        ("rtool nodes --json", cli),
        ("start-up + its calls bare", floor + cli_bare),
    ):
        out.setdefault(key, []).append(v)
    print(
        f"{n:3d} nodes: sweep (20 names, suspects known) {sw * 1000:7.1f} ms vs its calls bare "
        f"{sw_bare * 1000:6.1f} ms (x{sw / sw_bare:4.2f}), calls {calls}; "
        f"`rtool nodes --json` {cli * 1000:6.1f} ms vs start-up + its calls bare "
        f"{(floor + cli_bare) * 1000:6.1f} ms {dict(lib.count_calls(nodes_calls))}"
    )
    ok = lib.reads_only(lib.Counter(calls))
    return [lib.goal_line(f"{n} nodes, suspects known: no call beyond the reads", ok, str(calls))]


def queue_point(b: Bench, q: int, out: dict[str, list[float]]) -> list[str]:
    b.fill(q)
    b.rtool(*WATCH)  # a warm state dir: a first lookup on 22.05 asks sacct twice
    calls = b.calls_of(*WATCH)
    counted = lib.count_calls(calls)
    b.rtool(*WATCH1)
    counted1 = lib.count_calls(b.calls_of(*WATCH1))
    # start-up and both `watch job` in turn, round after round: one load for all three
    start, watch, watch1 = b.paired(
        partial(b.rtool, *BAD, ok=(3,)), partial(b.rtool, *WATCH), partial(b.rtool, *WATCH1)
    )
    out.setdefault(STARTUP, []).append(start)
    squeue = b.bare([c for c in calls if c[0] == "squeue"])
    reads = b.bare(calls)
    every = b.bare([["squeue", "-h", "-r"]])
    sw, sw_bare, sw_calls = suspect_sweep(b, f"queue{q}")
    for key, v in (
        (WATCH_CLI, watch),
        (WATCH1_CLI, watch1),
        (START_SQ, start + squeue),
        ("its squeue bare (watch job)", squeue),
        ("its calls bare (watch job)", reads),
        (SQUEUE_ALL, every),
        (SWEEP, sw),
        (SWEEP_BARE, sw_bare),
    ):
        out.setdefault(key, []).append(v)
    print(
        f"{q:6d} jobs: `watch job` 20 names {watch * 1000:7.1f} ms vs start-up + its squeue "
        f"{(start + squeue) * 1000:6.1f} ms (x{watch / (start + squeue):4.2f}), vs start-up + "
        f"all its calls bare {(start + reads) * 1000:6.1f} ms (x{watch / (start + reads):4.2f}) "
        f"{dict(counted)}; squeue -r (all) {every * 1000:6.1f} ms; in-process sweep with "
        f"suspects {sw * 1000:6.1f} ms vs its calls bare {sw_bare * 1000:6.1f} ms {sw_calls}; "
        f"`watch job` 1 name {watch1 * 1000:7.1f} ms (x{watch1 / (start + squeue):4.2f}) "
        f"{dict(counted1)}"
    )
    one = counted["squeue"] == 1 and counted["sacct"] <= 1 and lib.reads_only(counted)
    one1 = counted1["squeue"] == 1 and counted1["sacct"] <= 1 and lib.reads_only(counted1)
    known = lib.reads_only(lib.Counter(sw_calls))
    return [
        lib.goal_line(f"{q} jobs: one squeue, at most one sacct", one, str(dict(counted))),
        lib.goal_line(f"{q} jobs, 1 name: one squeue, at most one sacct", one1, str(counted1)),
        lib.goal_line(f"{q} jobs, suspects known: no call beyond the reads", known, str(sw_calls)),
    ]


def queue_axis(b: Bench, sizes: list[int], out: dict[str, list[float]]) -> list[str]:
    b.rtool(*BAD, ok=(3,))
    start = median_seconds(partial(b.rtool, *BAD, ok=(3,)), b.repeat)
    assert not b.calls_of(*BAD, ok=(3,)), "a rejected option must ask Slurm nothing"
    print(
        f"start-up of `watch job` (20 names, a rejected --timeout: no Slurm call) "
        f"{start * 1000:.1f} ms"
    )
    goals = []
    for q in sizes:  # start-up again at each size, beside the timed runs: the load moves
        goals += queue_point(b, q, out)
    at = min(sizes, key=lambda q: abs(q - 10_000))  # the goal's size: 10,000 jobs
    i = sizes.index(at)
    for label, key in (("20 names", WATCH_CLI), ("1 name", WATCH1_CLI)):
        ratio = out[key][i] / out[START_SQ][i]
        goal = f"`watch job` {label} at {at} jobs <= 1.5x (start-up + bare squeue)"
        goals.append(lib.goal_line(goal, ratio <= 1.5, f"x{ratio:.2f}"))
    return goals


def attempts_axis(b: Bench, sizes: list[int], out: dict[str, list[float]]) -> list[str]:
    excess: list[float] = []
    every: list[bool] = []
    for n in sizes:
        hb = b.base / f"hb-{n}.json"
        Path(f"{hb}.attempts").write_text(lib.attempt_records(n))
        args = ["history", f"scale-run-{n}", "--heartbeat", str(hb), "--no-accounting"]
        shown = len(json.loads(b.rtool(*args, "--json"))["ledger"]["attempts"])
        listed = lib.listed_attempts(b.rtool(*args))
        every.append(listed == list(range(1, n + 1)))
        calls = b.calls_of(*args)
        secs, bare = b.timed(*args), b.bare(calls)
        base = b.floor + bare
        out.setdefault("rtool history", []).append(secs)
        out.setdefault("start-up + its calls bare", []).append(base)
        excess.append(max(secs - base, 0.0))
        print(
            f"{n:4d} attempts ({shown} in full, {len(listed)} listed): `rtool history` "
            f"{secs * 1000:7.1f} ms vs "
            f"start-up + its calls bare {base * 1000:6.1f} ms (x{secs / base:4.2f}) "
            f"{dict(lib.count_calls(calls))}"
        )
    g = lib.growth(sizes, excess, floor=0.005)
    detail = f"cost above start-up + its calls grew x{g.cost:.1f} for x{g.work:.0f} the attempts"
    listed = str(dict(zip(sizes, every, strict=True)))
    return [
        lib.goal_line("history <= linear in attempts", g.ok, detail),
        lib.goal_line("history lists every attempt (oldest compacted)", all(every), listed),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smaller sweep (about 2 minutes)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--png", type=Path, default=ROOT / "docs" / "scale.png")
    for axis in ("nodes", "jobs", "attempts"):
        ap.add_argument(f"--{axis}", type=lib.parse_sizes, help=f"{axis} to measure: 64,256")
    ap.add_argument(
        "--real-nodes",
        type=int,
        default=MAX_NODES,
        help=f"nodes with a slurmd of their own (default {MAX_NODES}); the rest are simulated",
    )
    args = ap.parse_args()
    if not 1 <= args.real_nodes <= MAX_NODES:
        ap.error(f"--real-nodes must be between 1 and {MAX_NODES}")
    sizes = dict(QUICK if args.quick else FULL)
    for axis in ("nodes", "jobs", "attempts"):
        sizes[axis] = getattr(args, axis) or sizes[axis]
    nodes_out: dict[str, list[float]] = {}
    queue_out: dict[str, list[float]] = {}
    hist_out: dict[str, list[float]] = {}
    goals: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rtool-bench-scale-") as tmp:
        for n in sizes["nodes"]:
            b = Bench(Path(tmp) / f"c{n}", args.repeat)
            b.base.mkdir()
            with cluster(n, args.real_nodes):
                b.write_wrappers()
                b.floor = median_seconds(partial(b.rtool, "--version"), args.repeat)
                nodes_out.setdefault(FLOOR, []).append(b.floor)
                print(f"start-up floor (`rtool --version`) {b.floor * 1000:.1f} ms")
                goals += nodes_axis(b, n, sizes["jobs"][0], nodes_out)
                if n == sizes["nodes"][-1]:
                    goals += queue_axis(b, sizes["jobs"], queue_out)
                    goals += attempts_axis(b, sizes["attempts"], hist_out)
                    hist_out[FLOOR] = [b.floor] * len(sizes["attempts"])
    summary(sizes, (nodes_out, queue_out, hist_out), goals, args.png)
    return 0 if all(not g.startswith("FAIL") for g in goals) else 1


def summary(
    sizes: dict[str, list[int]],
    outs: tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[float]]],
    goals: list[str],
    png: Path,
) -> None:
    nodes_out, queue_out, hist_out = outs
    jobs = sizes["jobs"]
    above = [w - s for w, s in zip(queue_out[WATCH_CLI], queue_out[STARTUP], strict=True)]
    for label, sz, costs in (
        ("`watch job` above its start-up, over queued jobs", jobs, above),
        ("in-process sweep, over queued jobs", jobs, queue_out[SWEEP]),
        ("in-process sweep, over nodes", sizes["nodes"], nodes_out[SWEEP]),
        ("`rtool nodes --json`, over nodes", sizes["nodes"], nodes_out["rtool nodes --json"]),
    ):
        g = lib.growth(sz, costs, floor=0.005)
        detail = f"x{g.cost:.2f} for x{g.work:.0f}"
        goals.append(lib.goal_line(f"{label}: no faster than the work", g.ok, detail))
    goals.append(
        "TEST  a 16-node attempt losing one node -> 1 suspect: tests/nodes/test_scale.py::"
        "test_a_16_node_attempt_losing_one_node_blames_that_node_alone (64-node cluster)"
    )
    print("\n".join(["", *goals]))
    axes = [
        Axis("queue: 20 watched names among N queued jobs", "queued jobs", jobs, queue_out),
        Axis("nodes: 20 names, 2 suspects, nothing changed", "nodes", sizes["nodes"], nodes_out),
        Axis("attempts: rtool history (from records)", "attempts", sizes["attempts"], hist_out),
    ]
    for axis, ref in zip(axes, (SQUEUE_ALL, SWEEP_BARE, "rtool history"), strict=True):
        axis.reference = ref
    draw(png, axes, "bench/scale.py on a shared 2-core host; local Slurm with accounting")
    print(f"wrote {png}")


if __name__ == "__main__":
    sys.exit(main())
