"""The scenario, one function per step. Each narrates, acts, waits for what must follow and
records an Event; a step that cannot go on raises StepFailed (or WaitTimeout)."""

from __future__ import annotations

import re
import time

from devtools.demo.observe import KILLED_MARK, compress, read_text
from devtools.demo.scenario import Demo, StepFailed
from devtools.demo.workspace import LIMIT, TRAIN
from devtools.localslurm.control import READY
from rtool.core.slurm import SacctRecord, SlurmError
from rtool.core.slurm.parse import ParseError, parse_slurm_duration, parse_slurm_timestamp

_PID = re.compile(r"pid=(\d+)")


def start(d: Demo) -> None:
    """Submit the two training arrays, then start the cron emulator with the watchdog."""
    t, n = d.t, d.n
    n.title("Setup: two training arrays, and the cron emulator with the watchdogs")
    n.say(
        f"the toy training takes {t.step:g} s a step, saves a JSON checkpoint and resumes from "
        "it; rtool.shim guards its loop"
    )
    speed = ["--step-seconds", f"{t.step:g}"]
    limit = ["--steps", str(t.limit_steps), *speed, "--dir", str(d.ws.run_dir(LIMIT))]
    # On the local multi-node cluster demo-limit keeps to the first node and demo-train to the
    # others, so that the node failure (scene 4) hits demo-train only.
    usable = [k for k, v in d.cluster.node_states().items() if v in READY] if d.cluster else []
    first = usable[0] if len(usable) >= 3 else None
    if first is None:
        d.cluster = None  # fewer than three nodes take jobs: no node-failure scene
    pin = (f"--nodelist={first}",) if first else ()
    job = d.submit(LIMIT, t.limit_tasks, limit, t.limit_time, t.limit_signal, pin)
    n.ok(f"{LIMIT} ({job}): {t.limit_steps} steps, a {t.limit_time} limit per task (%1)")
    train = ["--steps", "100000", *speed, "--dir", str(d.ws.run_dir(TRAIN))]
    train += ["--hang-file", str(d.ws.job_dir(TRAIN) / "hang")]
    avoid = (f"--exclude={first}",) if first else ()
    job = d.submit(TRAIN, t.train_tasks, train, t.train_time, t.train_signal, avoid)
    n.ok(f"{TRAIN} ({job}): for rtool save, a hang and rtool stop")
    n.wait("both arrays to start training", lambda: d.runs(LIMIT) and d.runs(TRAIN), 90)
    n.ok("task 0 of each array is training")
    n.say(
        f"cron.hourly/watch-training runs `rtool watch all` (log watchdog on {TRAIN}: "
        f"--stale {t.stale}s, --on-hang requeue); the hourly period is compressed to {t.tick} s"
    )
    d.rtool("cron", "start")
    d.n.wait("the first cron tick", lambda: d.ws.watch_log.exists(), 4 * t.tick + 30)
    n.ok("the cron emulator ticks (each tick is a Slurm job that queues the next one)")


def time_limit(d: Demo) -> None:
    n, t = d.n, d.t
    n.title("1. Time limit: Slurm's signal → save → the next task resumes")
    n.say(
        f"{LIMIT}: --time {t.limit_time} --signal {t.limit_signal}: Slurm signals the batch "
        "shell, which forwards USR1 to the training (Slurm checks every 30 s: 5-35 s in); "
        "USR1 announces the end, so the training goes on until ~10 s before it"
    )
    runs = n.wait(f"Slurm's signal to {LIMIT} and its next task", lambda: _two_runs(d), 120)
    first, second = runs[0], runs[1]
    info = d.run_of(LIMIT, first[0])
    saved = info.saves[-1] if info and info.saves else None
    sig = info.signal if info else None
    ok = sig is not None and saved is not None and second[2] == saved + 1
    d.record(
        "time-limit",
        ok,
        f"{LIMIT} task {first[1]} got SIG{sig} from Slurm, saved step {saved} and exited; "
        f"task {second[1]} resumed at step {second[2]}",
        signal=sig,
        saved=saved,
        resumed_at=second[2],
    )


def _two_runs(d: Demo) -> list[tuple[int, str, int]] | None:
    runs = d.runs(LIMIT)
    return runs if len(runs) >= 2 else None


def save_switch(d: Demo) -> None:
    n = d.n
    n.title("2. rtool save: a checkpoint while the training goes on")
    pid, task, _ = d.runs(TRAIN)[-1]
    before = int(d.checkpoint(TRAIN).get("step", -1))
    switch = d.ws.job_dir(TRAIN) / f"save-switch.{TRAIN}"  # the run's own
    d.rtool("save", "--job-name", TRAIN)

    def saved() -> tuple[int] | None:
        ck = d.checkpoint(TRAIN)
        mine = _PID.search(str(ck.get("saved_by", "")))
        step = int(ck.get("step", -1))
        fresh = mine and int(mine[1]) == pid and step > before and not switch.exists()
        return (step,) if fresh else None

    (step,) = n.wait("the training to save and remove the save switch", saved, 20)
    n.ok(f"task {task} saved step {step} and removed the save switch")
    went_on = n.wait(
        "the training to go on", lambda: d.last_step(TRAIN, pid) >= step + 5 or None, 20
    )
    d.record(
        "save-switch",
        bool(went_on),
        f"checkpoint at step {step}; task {task} went on to step {d.last_step(TRAIN, pid)}",
        saved=step,
        task=task,
    )


def node_failure(d: Demo) -> None:
    n = d.n
    n.title("4. A node fails: the run goes on on the other nodes")
    cluster = d.cluster
    if cluster is None:
        n.say("not on the local multi-node cluster: no node to fail here (scene skipped)")
        d.record("node-failure", True, "skipped: not on the local multi-node cluster")
        return
    pid, task, _ = d.runs(TRAIN)[-1]
    job = f"{d.ids[TRAIN]}_{task}"
    node = d.tasks(TRAIN).get(task, {}).get("NodeList", "")
    if node not in cluster.nodes:
        raise StepFailed(f"{job} runs on {node or 'no node'}, not a node of the local cluster")
    saved = int(d.checkpoint(TRAIN).get("step", -1))
    n.say(f"{job} trains on node {node}; its last checkpoint is step {saved}")
    t0 = time.monotonic()
    cluster.fail_node(node, "rtool demo: power cut")
    at = d.last_step(TRAIN, pid)
    n.ok(f"node {node} is down: its slurmd and the job's processes killed at step {at}")
    _, task2, first = n.wait(
        "the next task to resume on another node", lambda: d.run_after(TRAIN, pid), 60
    )
    back = time.monotonic() - t0
    node2 = d.tasks(TRAIN).get(task2, {}).get("NodeList", "?")
    n.ok(f"task {task2} resumed at step {first} on {node2}, {back:.0f} s after the failure")
    failed = [r for r in _sacct(d, job) if r.state == "NODE_FAIL"]
    where = ",".join(failed[0].nodes) if failed else "?"
    if failed:
        n.note(f"sacct: {job} NODE_FAIL on {where} (the attempt, as accounting recorded it)")
    cluster.revive_node(node, timeout=60)
    n.ok(f"node {node} is back (slurmd restarted, node resumed)")
    d.record(
        "node-failure",
        first == saved + 1 and node2 != node and where == node,
        f"node {node} failed under {job} at step {at}: task {task2} resumed at step {first} "
        f"on {node2} {back:.0f} s later ({at - saved} step(s) since the checkpoint redone)",
        node=node,
        checkpoint=saved,
        failed_step=at,
        resumed_at=first,
        resumed_on=node2,
        resume_seconds=round(back, 1),
        redone=at - saved,
        sacct_node_fail=where,
    )


def _sacct(d: Demo, job: str) -> list[SacctRecord]:
    try:
        return d.slurm.sacct(job_ids=[job])
    except SlurmError:
        return []


def stop(d: Demo) -> None:
    n = d.n
    n.title("5. rtool stop: save and exit; the other tasks exit at once")
    pid, task, _ = d.runs(TRAIN)[-1]
    t0 = time.monotonic()
    d.rtool("stop", "--job-name", TRAIN)

    def exited() -> tuple[int] | None:
        run = d.run_of(TRAIN, pid)
        if run is None or not run.saves:
            return None
        last = d.last_step(TRAIN, pid)
        return (last,) if run.saves[-1] == last and _task_done(d, task) else None

    (step,) = n.wait(f"task {task} to save and exit", exited, 30)
    stopped = time.monotonic() - t0
    n.ok(f"task {task} saved step {step} and exited 0 ({stopped:.1f} s after rtool stop)")
    t1, exit_wall = time.monotonic(), time.time()
    n.wait("the remaining tasks to exit (the kill switch is set)", lambda: not d.active(TRAIN), 120)
    burn = time.monotonic() - t1
    records = d.tasks(TRAIN)
    later = {
        k: parse_slurm_duration(r.get("RunTime", "")) or 0.0
        for k, r in records.items()
        if _killed_task(d, k)
    }
    slowest = max(later.values(), default=0.0)
    took = "under 1 s" if slowest < 1 else f"{slowest:.0f} s at most"
    # tasks never requeued end as fast as Slurm starts them; a requeued one waits its begin time
    fresh = [_end(r) for k, r in records.items() if k in later and r.get("Restarts") == "0"]
    fresh_gone = max([e - exit_wall for e in fresh if e is not None], default=0.0)
    ok = bool(later) and slowest <= 10 and d.checkpoint(TRAIN).get("step") == step
    d.record(
        "kill-switch",
        ok,
        f"task {task} saved step {step} and exited; {len(later)} later task(s) exited at "
        f"once (each ran {took}; the array was gone {burn:.0f} s later, the requeued task "
        "waiting out its begin time)",
        saved=step,
        later_tasks=later,
        burn_seconds=round(burn, 1),
        fresh_tasks=len(fresh),
        fresh_gone_seconds=round(max(fresh_gone, 0.0), 1),
    )


def _end(record: dict[str, str]) -> float | None:
    try:
        end = parse_slurm_timestamp(record.get("EndTime", ""))
    except ParseError:
        return None
    return end.timestamp() if end else None


def _task_done(d: Demo, task: str) -> bool:
    state = d.tasks(TRAIN).get(task, {}).get("JobState", "")
    return state not in ("RUNNING", "COMPLETING", "CONFIGURING")


def _killed_task(d: Demo, task: str) -> bool:
    for path in d.ws.outputs(TRAIN):
        if path.name.endswith(f"_{task}.out"):
            return KILLED_MARK in read_text(path)
    return False


def finished(d: Demo) -> None:
    n, t = d.n, d.t
    n.title("6. finished(): the training ends and cancels the rest of its array")
    n.wait(f"{LIMIT} to train to the end", lambda: d.runs(LIMIT) and not d.active(LIMIT), 150)
    records = d.tasks(LIMIT)
    lines = d.steps(LIMIT)
    ran = sorted({s.task for s in lines}, key=int)
    cancelled = any(r.get("JobState") == "CANCELLED" for r in records.values())
    outputs = d.outputs(LIMIT)
    signals = sum(1 for o in outputs for r in o.runs if r.signal)
    finishers = [r for o in outputs for r in o.runs if r.finished]
    got = [s.step for s in lines]
    done = (d.ws.run_dir(LIMIT) / "heartbeat.json.done").exists()
    ok = got == list(range(t.limit_steps)) and done and cancelled and len(finishers) == 1
    ok = ok and len(d.ws.outputs(LIMIT)) == len(ran) < t.limit_tasks  # no task started after
    rest = f"{len(ran)}-{t.limit_tasks - 1}"
    d.record(
        "finished",
        ok,
        f"{LIMIT}: steps {compress(got)} each once, in tasks {', '.join(ran)} "
        f"({signals} time-limit signal(s)); the last one called finished(): tasks {rest} "
        f"{'cancelled' if cancelled else 'NOT cancelled'} before they started",
        steps=len(got),
        tasks_run=ran,
        signals=signals,
        cancelled=cancelled,
        done_marker=done,
    )
