"""The demo's third step: a hang the log watchdog finds (its alert with a py-spy stack dump),
requeues, and the run resumes (steps.py has the others)."""

from __future__ import annotations

import re
import time

from devtools.demo.scenario import Demo
from devtools.demo.workspace import TRAIN


def hang(d: Demo) -> None:
    n, t = d.n, d.t
    n.title("3. A hang: the log stops → alert, requeue, resume")
    pid, task, _ = d.runs(TRAIN)[-1]
    saved = int(d.checkpoint(TRAIN).get("step", -1))
    (d.ws.job_dir(TRAIN) / "hang").touch()
    n.say(f"touched {d.ws.job_dir(TRAIN) / 'hang'}: the toy stops at its next step, forever")
    (info,) = n.wait("the toy to hang", lambda: _hung(d, pid), 15)
    t_hang = time.monotonic()
    n.ok(f"task {task} hangs at step {info} (its log stops growing)")
    detect, dump = _alert(d, t_hang)
    task_id = f"{d.ids[TRAIN]}_{task}"
    restarts = n.wait(
        f"the watchdog's requeue of {task_id}", lambda: _restarts(d, task) or None, 30
    )
    n.ok(f"{task_id} requeued (Restarts={restarts}); Slurm kills the hung process")
    runs = n.wait("the next array task to resume", lambda: d.run_after(TRAIN, pid), 60)
    _, task2, first = runs
    redone = info - (saved + 1)
    n.ok(
        f"task {task2} resumed at step {first} from the last checkpoint "
        f"({redone} steps since that save are redone)"
    )
    t_resume = time.monotonic()
    n.wait("the resolved notice", lambda: _first(d, resolved=True), 4 * t.tick + 30)
    resolved = time.monotonic() - t_hang
    n.ok(f"resolved notice sent {time.monotonic() - t_resume:.0f} s after the resume")
    d.record(
        "hang",
        first == saved + 1 and any("train_toy.py" in line for line in dump[1:]),
        f"task {task} hung at step {info}: alert {detect:.0f} s later, {task_id} requeued, "
        f"task {task2} resumed at step {first}, resolved {resolved:.0f} s after the hang",
        hang_step=info,
        detect_seconds=round(detect, 1),
        requeued=task_id,
        resumed_at=first,
        redone=redone,
        resolved_seconds=round(resolved, 1),
        stack_dump=dump,
    )


def _alert(d: Demo, t_hang: float) -> tuple[float, list[str]]:
    """Wait for the log watchdog's alert; (seconds since the hang, the stack dump it carried)."""
    n, t = d.n, d.t
    n.say(
        f"the log watchdog calls a log silent for {t.stale} s a hang (at the next tick); the "
        "demo turns the shim's own hang detection off (--hang-after off) to show this backstop"
    )
    n.say("the alert carries a py-spy stack dump of the hung task (py-spy comes with rtool)")
    n.wait(
        "the log watchdog's alert (it needs a silence of --stale and a tick)",
        lambda: _first(d, resolved=False),
        t.stale + 4 * t.tick + 30,
    )
    detect = time.monotonic() - t_hang
    n.ok(f"the alert went out {detect:.0f} s after the hang")
    dump = stack_dump(d)
    for line in dump:
        n.note(line)
    return detect, dump


_FRAME = re.compile(r"(?<!\S)(\S{1,200}) \(([^()\s]{1,500}\.py):(\d{1,9})\)")


def stack_dump(d: Demo) -> list[str]:
    """The py-spy dump the log watchdog's first alert carried (on the log channel's line, where
    newlines are spaces): its process line and frames, innermost first."""
    for line in d.inbox.alert_lines():
        if "] log " not in line or "RESOLVED" in line:
            continue
        if " stacks=" not in line:
            return ["the alert carries no stack dump"]
        dump = line.split(" stacks=", 1)[1]
        process = re.search(r"Process \d+: .*?(?= Python v| Thread |$)", dump)
        frames = [f"  {m[1]} ({m[2]}:{m[3]})" for m in _FRAME.finditer(dump)]
        if not frames:
            return [f"stack dump: {dump[:200]}"]
        head = process[0] if process else "a process of the job"
        return [f"stack dump in the alert: {head}", *frames[:6]]
    return ["no alert of the log watchdog"]


def _hung(d: Demo, pid: int) -> tuple[int] | None:
    run = d.run_of(TRAIN, pid)
    return (run.hang,) if run is not None and run.hang is not None else None


def _first(d: Demo, resolved: bool) -> str | None:
    """The first alert (or resolved notice) of the log watchdog on the log channel."""
    for m in d.inbox.all():
        if m.channel == "log" and m.resolved == resolved and "] log " in m.title:
            return m.title
    return None


def _restarts(d: Demo, task: str) -> int:
    rec = d.tasks(TRAIN).get(task, {})
    try:
        return int(rec.get("Restarts", "0"))
    except ValueError:
        return 0
