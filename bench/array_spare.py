"""A wide array with a spare node on the local Slurm (issue #38): the time-limit stop and a node
failure, at N nodes.

An N-node DDP training (tests/e2e/ddp_toy.py: torchrun, gloo, CPU, one rank per node) submitted
as `rtool submit --nodes N --spare-nodes 1 --array 1-2%1 --time T --signal B:USR1@40`, on a
cluster of N+1 slurmd plus simulated nodes up to --cluster (64: the shape of issue #38's check;
simulated nodes are picked last, so the job lands on the real ones). Checked:

1. each task trains on to its deadline after the warning signal: its `.out` says "training on
   until", never "stopping now" (task 2 runs with the array's own job id), and every rank saves
   at the same step when it stops;
2. a node of task 2's launch fails (its slurmd and processes killed, the node down): task 2 trains
   again in place on its spare node (looked up as `<array>_2`: never requeued) from the step after
   its last checkpoint, without the failed node;
3. task 2 resumes task 1's last checkpoint, and no step is trained twice apart from the steps
   since the last checkpoint before the failure;
4. each task ends COMPLETED: the stop before the time limit leaves room for the exit of a wide
   launch (every rank, the launcher, the batch shell), learned from the earlier task's records.

Prints PASS/FAIL per check and the times; exit 0 when every check passes.

    python bench/array_spare.py --nodes 16 [--slurm 24.11]   # ~10 min on a 2-core VM
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.localslurm import control
from devtools.localslurm.slurmconf import free_ports
from rtool.core.slurm import ACTIVE_STATES, Slurm, expand_hostlist

DDP = Path(__file__).resolve().parent.parent / "tests" / "e2e" / "ddp_toy.py"
FIELD = re.compile(r"(\w+)=(\S+)")
CKPT_EVERY = 20


def rows(path: Path) -> list[dict[str, str]]:
    """The toy's `key=value` lines of one log file."""
    if not path.exists():
        return []
    return [dict(FIELD.findall(t)) for t in path.read_text().splitlines()]


def wait(what: str, ok: Callable[[], object], limit: float) -> None:
    end = time.monotonic() + limit
    while not ok():
        if time.monotonic() > end:
            raise SystemExit(f"FAIL  timed out after {limit:.0f}s waiting for {what}")
        time.sleep(1)


def active(slurm: Slurm, name: str) -> list[str]:
    """The run's tasks still queued or running (squeue also lists those just ended)."""
    return [j.job_id for j in slurm.squeue(names=[name]) if j.state in ACTIVE_STATES]


def submit(nodes: int, run: Path, name: str, limit: str) -> str:
    launcher = (
        f"{sys.executable} -m torch.distributed.run --nnodes {nodes} --nproc-per-node 1 "
        f"--rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{free_ports(1)[0]} --rdzv-id {name} "
        "--rdzv-conf timeout=600"
    )
    env = os.environ | {"DDP_DIR": str(run), "DDP_STEPS": "50000", "OMP_NUM_THREADS": "1",
                        "DDP_STEP_SECONDS": "0.1", "DDP_CKPT_EVERY": str(CKPT_EVERY)}  # fmt: skip
    args = ["submit", str(DDP), "--job-name", name, "--nodes", str(nodes), "--spare-nodes", "1"]
    args += ["--array", "1-2%1", "--launcher", launcher, "--time", limit, "--signal", "B:USR1@40"]
    args += ["--heartbeat", str(run / "hb.json"), "--parsable"]
    res = subprocess.run([sys.executable, "-m", "rtool", *args], cwd=run.parent, env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    if res.returncode != 0:
        raise SystemExit(f"FAIL  rtool submit exited {res.returncode}: {res.stderr.strip()}")
    return res.stdout.strip()


def verdict(name: str, ok: bool, detail: str) -> bool:
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
    return ok


def checks(run: Path, array: str, nodes: int, victim: str, t_fail: float) -> bool:
    outs = {p.stem.rsplit("_", 1)[1]: p.read_text(errors="replace")
            for p in run.parent.glob(f"*-{array}_*.out")}  # fmt: skip
    steps = [r for rank in range(nodes) for r in rows(run / f"steps-{rank}.log")]
    saves = rows(run / "saves.log")
    good = verdict(
        "each task trains on to its deadline after the signal",
        sorted(outs) == ["1", "2"]
        and all("training on until" in t and "stopping now" not in t for t in outs.values()),
        ", ".join(f"task {k}: {len(v)} bytes of .out" for k, v in sorted(outs.items())),
    )
    for task in ("1", "2"):  # the stop of the task's last launch (its deadline)
        last = max((r["launch"] for r in steps if r["task"] == task), default="0")
        stops = [s for s in saves if (s["task"], s["launch"]) == (task, last)]
        stops = [s for s in stops if s["reason"] != "periodic"]
        at = {s["saved"] for s in stops}
        good &= verdict(
            f"task {task}: every rank saves at the same step when it stops",
            len({s["rank"] for s in stops}) == nodes and len(at) == 1,
            f"{len(stops)} saves at step(s) {sorted(at)}",
        )
    before = [s for s in saves if (s["task"], s["launch"]) == ("2", "0") and s["rank"] == "0"]
    ckpt = max(int(s["saved"]) for s in before) if before else -1
    again = [r for r in steps if (r["task"], r["launch"]) == ("2", "1")]
    first = min(again, key=lambda r: float(r["t"])) if again else None
    on = {r["node"] for r in again}
    good &= verdict(
        "task 2 trains again in place on its spare, without the failed node, after its checkpoint",
        first is not None
        and int(first["step"]) == ckpt + 1
        and victim not in on
        and len(on) == nodes
        and {r["job"] for r in again} == {array},
        f"checkpoint {ckpt}, first step again {first and first['step']}, on {len(on)} nodes, "
        f"{first and float(first['t']) - t_fail:.1f}s after the failure",
    )
    first1 = min(int(r["step"]) for r in steps if r["task"] == "2")
    stop1 = [int(s["saved"]) for s in saves if s["task"] == "1" and s["reason"] != "periodic"]
    resumed = bool(stop1) and first1 == max(stop1) + 1
    detail = f"task 1 saved {max(stop1, default=-1)}, task 2 began at {first1}"
    good &= verdict("task 2 resumes task 1's last checkpoint", resumed, detail)
    rank0 = [int(r["step"]) for r in steps if r["rank"] == "0"]
    twice = len(rank0) - len(set(rank0))
    return verdict("no step twice but those lost to the failure", twice <= CKPT_EVERY,
                   f"{twice} step(s) of rank 0 trained twice") and good  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=16, help="nodes of the training (16)")
    ap.add_argument("--cluster", type=int, default=64, help="nodes of the cluster (64)")
    ap.add_argument("--slurm", default=None, help="22.05 or 24.11")
    ap.add_argument("--time", default="0:02:30", help="time limit of each task (0:02:30)")
    a = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="rtool-array-spare-"))
    real = a.nodes + 1
    t0 = time.monotonic()
    cluster = control.up(base / "slurm", nodes=real, simulated=max(0, a.cluster - real),
                         release=a.slurm, timeout=600)  # fmt: skip
    print(f"cluster: {real} slurmd + {max(0, a.cluster - real)} simulated, Slurm "
          f"{cluster.layout.release if cluster.layout else '?'}, up in "
          f"{time.monotonic() - t0:.0f}s")  # fmt: skip
    os.environ.update(cluster.env)  # its slurm.conf, its release's clients first on PATH
    try:
        return 0 if run_array(a, base, cluster) else 1
    finally:
        control.down(cluster.dir)


def run_array(a: argparse.Namespace, base: Path, cluster: control.Cluster) -> bool:
    run = base / "job" / "run"
    run.mkdir(parents=True)
    (run.parent / "rtool.toml").write_text(f'[state]\ndir = "{base / "state"}"\n')
    slurm = Slurm(timeout=30)
    name = f"wide{a.nodes}"
    array = submit(a.nodes, run, name, a.time)
    print(f"array {array}: {a.nodes} nodes + 1 spare, 2 tasks of {a.time}")
    started = time.monotonic()
    last = run / f"steps-{a.nodes - 1}.log"
    wait("task 2: 30 steps", lambda: sum(r["task"] == "2" for r in rows(last)) >= 30, 900)
    (record,) = slurm.show_job(f"{array}_2")
    held = expand_hostlist(record["NodeList"])
    victim = held[-1]
    print(f"task 2 on {record['NodeList']} ({len(held)} nodes), job id {record['JobId']}: "
          f"failing {victim} at {time.monotonic() - started:.0f}s")  # fmt: skip
    t_fail = time.time()
    cluster.fail_node(victim, "rtool bench: node failure under a wide array task")
    try:
        wait("the array to end", lambda: not active(slurm, name), 900)
    finally:
        cluster.revive_node(victim, timeout=120)
    (record,) = slurm.show_job(f"{array}_2")
    ok = verdict(
        "task 2 never requeued", record["Restarts"] == "0", f"Restarts={record['Restarts']}"
    )
    states = {t: slurm.show_job(f"{array}_{t}")[0]["JobState"] for t in ("1", "2")}
    ok &= verdict(
        "each task's stop and exit fit before its time limit (COMPLETED, not TIMEOUT)",
        set(states.values()) == {"COMPLETED"},
        ", ".join(f"task {t}: {s}" for t, s in states.items()),
    )
    print(f"the array took {time.monotonic() - started:.0f}s")
    return checks(run, array, a.nodes, victim, t_fail) and ok


if __name__ == "__main__":
    sys.exit(main())
