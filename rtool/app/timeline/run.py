"""A run's section of the page: its totals, the timeline, where the time went (goodput and
time lost by cause) and every attempt. `run_page` is `rtool history RUN --html FILE`'s page."""

from __future__ import annotations

from rtool.app.timeline.chart import W, chart
from rtool.app.timeline.page import COLOURS, document, esc, legend, stamp
from rtool.core.units import format_duration
from rtool.runs import provenance
from rtool.runs.describe import exit_text
from rtool.runs.endings import Cause, cause_of
from rtool.runs.losses import Breakdown, breakdown
from rtool.runs.model import Attempt, Ledger, Totals
from rtool.runs.render import queued
from rtool.runs.totals import ends, totals

OVERHEAD = "#bbbbbb"
#: The last lines of an attempt's log shown under it (each cut to 200 characters).
TAIL_LINES = 8
USEFUL = COLOURS[Cause.FINISHED]


def _dur(x: float | None) -> str:
    return format_duration(x) if x is not None else "-"


def _cards(led: Ledger, tot: Totals) -> str:
    good = f"{tot.goodput:.2f}" if tot.goodput is not None else "?"
    progress = f"{led.best_step}" if led.best_step is not None else "?"
    if led.total_steps:
        progress += f" of {led.total_steps}"
    cards = [
        ("goodput", good),
        ("attempts", str(tot.attempts)),
        ("highest step", progress),
        ("steps lost", str(tot.steps_lost)),
        ("computing", _dur(tot.computing_s)),
        ("queued", queued(tot)),
    ]
    inner = "".join(f'<div class="card">{esc(k)}<b>{esc(v)}</b></div>' for k, v in cards)
    return f'<div class="cards">{inner}</div>'


def _bar(bd: Breakdown) -> str:
    parts = [("useful computing", bd.useful_s, USEFUL)]
    parts += [(f"lost to {x.cause.value}", x.total_s, COLOURS[x.cause]) for x in bd.losses]
    parts.append(("start-up, saves and the rest", bd.overhead_s, OVERHEAD))
    total = sum(v for _, v, _ in parts) or 1.0
    x, out = 0.0, []
    for label, value, colour in parts:
        w = value / total * W
        if w <= 0:
            continue
        tip = esc(f"{label}: {format_duration(value)} ({value / total:.0%})")
        out.append(
            f'<rect class="share" x="{x:.1f}" y="0" width="{w:.1f}" height="24" '
            f'fill="{colour}"><title>{tip}</title></rect>'
        )
        x += w
    return (
        f'<svg class="shares" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} 24" '
        f'width="{W}" height="24" role="img" aria-label="where the time went">'
        + "".join(out)
        + "</svg>"
    )


def _losses(bd: Breakdown) -> str:
    head = (
        "<tr><th>cause</th><th class=num>attempts</th><th class=num>steps lost</th>"
        "<th class=num>computing redone</th><th class=num>hung</th>"
        "<th class=num>waiting for the next attempt</th><th class=num>time lost</th></tr>"
    )
    rows = [
        f'<tr data-cause="{esc(x.cause.value)}"><td><i class="sw" '
        f'style="background:{COLOURS[x.cause]}"></i>{esc(x.cause.value)}</td>'
        f"<td class=num>{x.attempts}</td><td class=num>{x.steps_lost}</td>"
        f"<td class=num>{_dur(x.redone_s)}</td><td class=num>{_dur(x.stalled_s)}</td>"
        f"<td class=num>{_dur(x.waiting_s)}</td><td class=num>{_dur(x.total_s)}</td></tr>"
        for x in bd.losses
    ]
    rows.append(
        "<tr><td>start-up, saves and the rest of the computing</td><td></td><td></td>"
        f"<td class=num>{_dur(bd.overhead_s)}</td><td></td><td></td><td class=num>"
        f"{_dur(bd.overhead_s)}</td></tr>"
    )
    step = f"{bd.step_seconds:.3g} s" if bd.step_seconds else "unknown"
    note = (
        f'<p class="small muted">Useful computing {_dur(bd.useful_s)} (steps gained at a step '
        f"time of {esc(step)}). Steps lost are the steps done again after a restart.</p>"
    )
    return f"<table class=losses>{head}{''.join(rows)}</table>{note}"


def _row(a: Attempt, end: float | None, changed: tuple[int, list[str]] | None = None) -> str:
    ran = end - a.started if end is not None and a.started is not None else None
    steps = "-" if a.step_end is None else f"{a.step_start if a.step_start is not None else '-'}"
    steps += "" if a.step_end is None else f"–{a.step_end}"
    cause = cause_of(a)
    sig = a.signature.label if a.signature else (a.error or "")
    if a.signature and a.signature.line:  # as `rtool history` shows it
        line = a.signature.line
        sig = line if line.startswith(a.signature.label) else f"{sig}: {line}"
    cells = [
        str(a.number),
        a.job_id + (f"+{a.restart}" if a.restart else ""),
        ",".join(a.nodes) or "-",
        stamp(a.started),
        _dur(ran),
        a.state,
        exit_text(a) if a.is_over else "-",
        cause.value,
        steps,
        "-" if a.last_saved_step is None else str(a.last_saved_step),
        "-" if a.steps_lost is None else str(a.steps_lost),
        a.stop_reason or "-",
        sig[:160],
    ]
    tds = "".join(f"<td>{esc(c)}</td>" for c in cells[:-1])
    tail = "\n".join(line[:200] for line in a.log_tail[-TAIL_LINES:])
    log = f"<details><summary>log</summary><pre>{esc(tail)}</pre></details>" if tail else ""
    if changed is not None:
        what = f"changed since attempt {changed[0]}: {'; '.join(changed[1])}"
        log = f'<div class="changed">{esc(what)}</div>{log}'
    tds += f"<td>{esc(cells[-1])}{log}</td>"
    return f'<tr data-attempt="{a.number}" data-cause="{esc(cause.value)}">{tds}</tr>'


def _table(led: Ledger, now: float) -> str:
    names = "# job nodes started ran state exit ended steps saved lost stop signature"
    head = "".join(f"<th>{n}</th>" for n in names.split())
    end = ends(led, now)
    changed = provenance.changed(led.attempts)
    rows = "".join(_row(a, end.get(a.number), changed.get(a.number)) for a in led.attempts)
    return f'<div class="scroll"><table class=attempts><tr>{head}</tr>{rows}</table></div>'


def _compacted(led: Ledger) -> str:
    """What is summarised: the oldest attempts, counted above but not drawn or listed here."""
    n = led.folded.attempts if led.folded else 0
    if not n:
        return ""
    return (
        f'<p class="muted compacted">The oldest {n} attempt(s) are compacted: counted in the '
        f"cards and the losses above, listed by <code>rtool history {esc(led.run)}</code>, "
        f"not drawn; the last {len(led.attempts)} are shown in full.</p>"
    )


def run_section(led: Ledger, now: float, level: int = 1) -> str:
    """The run's part of a page (`level`: its heading's level, 1 alone, 2 in the status page),
    as of its ledger's last update: an attempt running then is drawn up to that time."""
    now = min(now, led.updated) if led.updated else now
    tot = totals(led, now)
    bd = breakdown(led, tot, now)
    h, sub = f"h{level}", f"h{level + 1}"
    status = "finished" if led.finished else "not finished"
    source = "sacct (accounting)" if led.accounting else f"degraded mode ({led.note})"
    causes = list(dict.fromkeys(cause_of(a) for a in led.attempts))
    return (
        f'<section class="run" data-run="{esc(led.run)}">'
        f"<{h}>Run {esc(led.run)}</{h}>"
        f'<p class="muted">{esc(status)}; {tot.attempts} attempt(s); source: {esc(source)}; '
        f"updated {esc(stamp(led.updated))}</p>"
        + _cards(led, tot)
        + f"<{sub}>Steps over time, every attempt</{sub}>"
        + legend(causes)
        + chart(led, now)
        + f"<{sub}>Where the time went</{sub}>"
        + _bar(bd)
        + _losses(bd)
        + _compacted(led)
        + f"<{sub}>Attempts</{sub}>"
        + _table(led, now)
        + "</section>"
    )


def run_page(led: Ledger, now: float) -> str:
    """`rtool history RUN --html FILE`: the run alone."""
    return document(f"rtool: run {led.run}", run_section(led, now), now)
