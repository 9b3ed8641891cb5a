"""Ledgers of runs with many attempts for the page tests (typed records, as the ledger holds
them): time limits, crashes, hangs, node failures and preemptions, on 1 to 4 of 64 nodes."""

from __future__ import annotations

from rtool.runs.model import Attempt, Ledger
from rtool.runs.signatures.base import Signature

T0 = 1_790_000_000.0
STEP_S = 0.5
RUN_S = 1800.0  # each attempt's time limit: 30 minutes


def _end(i: int) -> tuple[str, dict[str, object]]:
    """How attempt i ends (a fixed pattern, every kind present in 50 attempts)."""
    if i % 11 == 5:
        line = "torch.OutOfMemoryError: CUDA out of memory"
        sig = Signature("cuda-oom", "CUDA out of memory", line)
        return "FAILED", {"exit_code": 1, "signature": sig, "error": "OutOfMemoryError: CUDA"}
    if i % 13 == 7:
        return "NODE_FAIL", {"signature": Signature("node-fail", "node failure")}
    if i % 17 == 9:
        return "REQUEUED", {}
    if i % 19 == 3:
        return "PREEMPTED", {"signature": Signature("preempted", "preempted")}
    return "TIMEOUT", {"stop_reason": "time_limit"}


def ledger(n: int, run: str = "big-run", running: bool = True) -> Ledger:
    """`n` attempts one after another; the last one still running when `running`."""
    atts, t, step = [], T0, 0
    for i in range(n):
        started = t + 30.0 * (1 + i % 4)
        ran = RUN_S if i % 5 else RUN_S * 0.6
        end_step = step + int(ran / STEP_S)
        nodes = tuple(f"n{(i * 4 + k) % 64 + 1:02d}" for k in range(1 + (i % 3 == 0) * 3))
        last = i == n - 1 and running
        state, more = ("RUNNING", {}) if last else _end(i)
        code = more.pop("exit_code", 0)
        limit = state == "TIMEOUT"
        lost = 0 if limit or last else min(end_step - step, 40 + i % 60)
        atts.append(
            Attempt(
                run=run, number=i + 1, job_id=f"4242_{i}", nodes=nodes, queued_at=t,
                started=started, ended=None if last else started + ran, state=state,
                exit_code=None if last else int(code), step_start=step,  # type: ignore[call-overload]
                step_end=end_step, last_saved_step=None if last else end_step - lost,
                steps_lost=None if last else lost, **more,  # type: ignore[arg-type]
            )
        )  # fmt: skip
        step = end_step - lost + 1
        t = started + ran
    best = max(a.step_end or 0 for a in atts)
    return Ledger(run, atts, best_step=best, step_seconds=STEP_S, updated=t, total_steps=best * 2)
