"""The ledger as a fixed-width table with the run's totals (rtool history)."""

from __future__ import annotations

import time

from rtool.core.slurm.hostlist import compress_hostlist
from rtool.core.units import format_duration
from rtool.runs import provenance
from rtool.runs.compact import rows_as_attempts
from rtool.runs.describe import exit_text
from rtool.runs.inplace import InPlaceRestart
from rtool.runs.model import Attempt, Ledger, Totals
from rtool.runs.signatures.base import Signature

COLUMNS = (
    ("#", 3),
    ("job", 12),
    ("nodes", 10),
    ("queued", 7),
    ("started", 19),
    ("ran", 7),
    ("state", 13),
    ("exit", 9),
    ("steps", 13),
    ("saved", 7),
    ("lost", 5),
    ("stop", 12),
)


def _dur(x: float | None) -> str:
    return format_duration(x) if x is not None else "-"


def _opt(x: object) -> str:
    return "-" if x is None else str(x)


def row(a: Attempt, now: float) -> list[str]:
    """The attempt's cells, each padded to its column's width."""
    ran = a.duration if a.ended is not None else (now - a.started if a.started else None)
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(a.started)) if a.started else "-"
    steps = "-" if a.step_end is None else f"{_opt(a.step_start)}→{a.step_end}"
    cells = [
        str(a.number),
        a.job_id + (f"+{a.restart}" if a.restart else ""),
        compress_hostlist(a.nodes) or "-",
        _dur(a.queue_wait),
        started,
        _dur(ran),
        a.state,
        exit_text(a) if a.is_over else "-",
        steps,
        _opt(a.last_saved_step),
        _opt(a.steps_lost),
        a.stop_reason or "-",
    ]
    return [c.ljust(w) for c, (_, w) in zip(cells, COLUMNS, strict=True)]


def queued(tot: Totals) -> str:
    """The run's time in the queue, `unknown` without submit times (degraded mode)."""
    return format_duration(tot.queued_s) if tot.queued_s is not None else "unknown"


def restart_line(r: InPlaceRestart) -> str:
    """One in-place restart under its attempt: when, why, what it cost."""
    at = time.strftime("%H:%M:%S", time.localtime(r.time))
    why = f"{r.cause}: {r.detail[:100]}" if r.detail else r.cause
    code = f"exit {r.exit_code}" if r.exit_code is not None else "exit ?"
    resumed = f"resumed at step {r.resumed_step}" if r.resumed_step is not None else "not resumed"
    redone = f", {r.steps_redone} steps redone" if r.steps_redone is not None else ""
    lost = f", {format_duration(r.lost_s)} from the last step to the next" if r.lost_s else ""
    return f"     ↳ {at} restarted in place ({why}; {code}): {resumed}{redone}{lost}"


def compacted_line(led: Ledger, shown: int) -> str:
    """What the rows above say of the oldest attempts, and what was summarised."""
    n = led.folded.attempts if led.folded else 0
    line = (
        f"  ↑ the oldest {n} attempt(s), compacted (no nodes, log or signature kept; the "
        f"ledger keeps the last {len(led.attempts)} in full); the totals cover every attempt"
    )
    if shown < n:
        line += f"; {n - shown} of them from before rtool kept rows: only in the totals"
    return line


def checkpoint_line(sig: Signature) -> str:
    """Under a corrupt checkpoint's attempt: what it read, and the last complete one."""
    last = sig.last_complete
    said = "unknown" if last is None else (last or "none older")
    return f"    ↳ failed to load {sig.checkpoint}; last complete checkpoint: {said}"


def table(led: Ledger, tot: Totals, now: float) -> str:
    head = [h.ljust(w) for h, w in COLUMNS] + ["signature"]
    lines = ["  ".join(head).rstrip()]
    short = rows_as_attempts(led.run, led.folded)
    lines += ["  ".join(row(a, now)).rstrip() for a in short]
    if led.folded and led.folded.attempts:
        lines.append(compacted_line(led, len(short)))
    changed = provenance.changed(led.attempts)
    for a in led.attempts:
        sig = a.signature.label if a.signature else (a.error or "")
        if a.signature and a.signature.line:
            line = a.signature.line[:80]
            sig = line if line.startswith(a.signature.label) else f"{sig}: {line}"
        lines.append("  ".join([*row(a, now), sig]).rstrip())
        if a.signature and a.signature.checkpoint:
            lines.append(checkpoint_line(a.signature))
        lines += [restart_line(r) for r in led.restarts_of(a)]
        if a.number in changed:
            lines.append(provenance.line(*changed[a.number]))
    good = f"{tot.goodput:.2f}" if tot.goodput is not None else "?"
    status = "finished" if led.finished else "not finished"
    lines += [
        "",
        f"run {led.run}: {status}; {tot.attempts} attempt(s)"
        + (f" and {tot.restarts_in_place} in-place restart(s)" if tot.restarts_in_place else "")
        + ", steps gained "
        f"{_opt(tot.steps_gained)}, steps lost {tot.steps_lost} (redone {tot.steps_redone}), "
        f"queued {queued(tot)}, computing {format_duration(tot.computing_s)}, "
        f"goodput {good}",
    ]
    if led.total_steps is not None and led.best_step is not None:
        lines.append(f"progress: step {led.best_step} of {led.total_steps}")
    lines.append(
        "source: sacct (accounting)" if led.accounting else f"source: degraded mode ({led.note})"
    )
    if led.accounting and led.note:
        lines.append(f"note: {led.note}")
    if led.rtool_version or led.shim_version:
        lines.append(
            f"rtool: {led.rtool_version or '?'} watching, {led.shim_version or '?'} in the training"
        )
    return "\n".join(lines) + "\n"
