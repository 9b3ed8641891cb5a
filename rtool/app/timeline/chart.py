"""The run's timeline as inline SVG: steps over wall-clock time across every attempt (each a
segment from its first to its highest step, coloured by how it ended, with a mark at the end and
the steps it lost dashed), the waits between attempts shaded, and below, one lane per node with
the attempts that ran there. Pure: a ledger in, SVG text out."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

from rtool.app.timeline.page import COLOURS, esc
from rtool.core.units import format_duration
from rtool.runs import provenance
from rtool.runs.describe import phrase
from rtool.runs.endings import Cause, cause_of
from rtool.runs.model import Attempt, Ledger
from rtool.runs.totals import ends

W, LEFT, RIGHT, TOP, PLOT_H = 1000, 64, 24, 14, 260
LANE_H, MAX_LANES = 14, 48
#: Nice tick spacings in seconds.
TICKS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200)


@dataclass(frozen=True)
class Scale:
    t0: float
    t1: float
    top: int

    def x(self, t: float) -> float:
        span = max(self.t1 - self.t0, 1e-9)
        return LEFT + (t - self.t0) / span * (W - LEFT - RIGHT)

    def y(self, step: float) -> float:
        return TOP + PLOT_H - step / max(self.top, 1) * PLOT_H


def _scale(led: Ledger, now: float) -> Scale | None:
    started = [a for a in led.attempts if a.started is not None]
    if not started:
        return None
    t0 = min(a.started for a in started if a.started is not None)
    t1 = max(ends(led, now).values())
    steps = [a.step_end for a in started if a.step_end is not None]
    top = max([led.total_steps or 0, led.best_step or 0, *steps, 1])
    return Scale(t0, max(t1, t0 + 1.0), top)


def _time_ticks(s: Scale) -> str:
    span = s.t1 - s.t0
    every = next((t for t in TICKS if span / t <= 8), 86400 * max(1, round(span / 86400 / 8)))
    fmt = "%m-%d %H:%M" if span > 86400 else ("%H:%M:%S" if span < 600 else "%H:%M")
    first = (int(s.t0) // every + 1) * every
    out = []
    bottom = TOP + PLOT_H
    for t in range(first, int(s.t1) + 1, every):
        x = s.x(t)
        label = time.strftime(fmt, time.localtime(t))
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{bottom}"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle">{label}</text>')
    return "".join(out)


def _num(step: int) -> str:
    """A step on the axis: 1500, 25k, 3.5M."""
    if step >= 1_000_000:
        return f"{step / 1_000_000:g}M"
    return f"{step / 1000:g}k" if step >= 10_000 else str(step)


def _step_ticks(s: Scale) -> str:
    raw = s.top / 5
    mag = 10 ** max(0, len(str(int(raw))) - 1)
    every = max(1, next((m * mag for m in (1, 2, 5, 10) if m * mag >= raw), 10 * mag))
    out = []
    for step in range(0, s.top + 1, every):
        y = s.y(step)
        out.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_num(step)}</text>')
    return "".join(out)


def _gaps(led: Ledger, s: Scale, end: dict[int, float]) -> str:
    """Shade the time between one attempt's end and the next one's start."""
    out = []
    atts = [a for a in led.attempts if a.started is not None]
    for prev, nxt in itertools.pairwise(atts):
        done = end[prev.number]
        if nxt.started is None or nxt.started <= done:
            continue
        x1, x2 = s.x(done), s.x(nxt.started)
        wait = format_duration(nxt.started - done)
        tip = esc(f"{wait} between attempt {prev.number} and attempt {nxt.number}")
        out.append(
            f'<rect class="gap" x="{x1:.1f}" y="{TOP}" width="{max(x2 - x1, 0.5):.1f}" '
            f'height="{PLOT_H}" fill="#f2f2f2"><title>{tip}</title></rect>'
        )
    return "".join(out)


def _mark(cause: Cause, x: float, y: float, colour: str, tip: str, n: int, k: float) -> str:
    """The end of an attempt: a shape per cause (told apart without colour too), `k` times
    the full size (smaller when there are many)."""
    a = f'class="end" data-attempt="{n}" data-cause="{esc(cause.value)}"'
    t = f"<title>{tip}</title>"
    u = 5 * k

    def stroke(d: str) -> str:
        return f'<path {a} d="{d}" stroke="{colour}" stroke-width="3" fill="none">{t}</path>'

    if cause is Cause.CRASH:
        w = 2 * u
        d = f"M{x - u:.1f},{y - u:.1f}l{w:.1f},{w:.1f}m{-w:.1f},0l{w:.1f},{-w:.1f}"
        return stroke(d)
    if cause is Cause.NODE_FAILURE:
        pts = f"{x:.1f},{y - 1.4 * u:.1f} {x + 1.2 * u:.1f},{y:.1f} {x:.1f},{y + 1.4 * u:.1f} "
        pts += f"{x - 1.2 * u:.1f},{y:.1f}"
        return f'<polygon {a} points="{pts}" fill="{colour}" stroke="#222">{t}</polygon>'
    if cause is Cause.HANG:
        d = f"M{x - 0.6 * u:.1f},{y - 1.2 * u:.1f}v{2.4 * u:.1f}m{1.2 * u:.1f},0v{-2.4 * u:.1f}"
        return stroke(d)
    if cause is Cause.PREEMPTED:
        pts = f"{x - 1.2 * u:.1f},{y - u:.1f} {x + 1.2 * u:.1f},{y - u:.1f} "
        pts += f"{x:.1f},{y + 1.2 * u:.1f}"
        return f'<polygon {a} points="{pts}" fill="{colour}">{t}</polygon>'
    hollow = cause in (Cause.TIME_LIMIT, Cause.RUNNING)
    fill = "#fff" if hollow else colour
    return (
        f'<circle {a} cx="{x:.1f}" cy="{y:.1f}" r="{u:.1f}" fill="{fill}" stroke="{colour}" '
        f'stroke-width="2">{t}</circle>'
    )


def _attempt(a: Attempt, s: Scale, end: float, k: float) -> str:
    assert a.started is not None
    cause = cause_of(a)
    colour = COLOURS[cause]
    x1, x2 = s.x(a.started), s.x(end)
    first = a.step_start or 0
    last = a.step_end if a.step_end is not None else first
    y1, y2 = s.y(first), s.y(last)
    tip = esc(f"{phrase(a)}: {cause.value}; steps {first}-{last}")
    out = [
        f'<line class="att" data-attempt="{a.number}" x1="{x1:.1f}" y1="{y1:.1f}" '
        f'x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colour}" stroke-width="3">'
        f"<title>{tip}</title></line>"
    ]
    if a.steps_lost and last > first:
        out.append(_lost(a, s, (x1, x2), (first, last)))
    if a.is_over or cause is Cause.RUNNING:
        out.append(_mark(cause, x2, y2, colour, tip, a.number, k))
    return "".join(out)


def _lost(a: Attempt, s: Scale, xs: tuple[float, float], steps: tuple[int, int]) -> str:
    """The steps the attempt lost, dashed: from its own last save, or from its first step when
    it crashed before its first save (the usual crash), up to its highest step."""
    (x1, x2), (first, last) = xs, steps
    own = (
        a.last_saved_step if a.last_saved_step is not None and a.last_saved_step >= first else None
    )
    at = min(max(first, last - (a.steps_lost or 0)), last)
    x = x1 + (at - first) / (last - first) * (x2 - x1)
    why = f"after the save at {own}" if own is not None else "(no save of its own)"
    tip = esc(f"attempt {a.number}: {a.steps_lost} steps lost {why}")
    return (
        f'<line class="lost" x1="{x:.1f}" y1="{s.y(at):.1f}" x2="{x2:.1f}" '
        f'y2="{s.y(last):.1f}" stroke="#c00" stroke-width="3" stroke-dasharray="4 3">'
        f"<title>{tip}</title></line>"
    )


def _lanes(led: Ledger, s: Scale, end: dict[int, float], top: float) -> tuple[str, int]:
    """One lane per node (the busiest MAX_LANES), each attempt a bar where it ran."""
    count: dict[str, int] = {}
    for a in led.attempts:
        for n in a.nodes:
            count[n] = count.get(n, 0) + 1
    nodes = sorted(sorted(count, key=lambda n: -count[n])[:MAX_LANES])
    row = {n: i for i, n in enumerate(nodes)}
    out = [f'<text x="{LEFT}" y="{top - 4:.1f}">nodes</text>']
    for n, i in row.items():
        y = top + i * LANE_H
        out.append(f'<text x="{LEFT - 6}" y="{y + 10:.1f}" text-anchor="end">{esc(n)}</text>')
    for a in led.attempts:
        if a.started is None:
            continue
        colour = COLOURS[cause_of(a)]
        x1, x2 = s.x(a.started), s.x(end[a.number])
        tip = esc(phrase(a))
        for n in a.nodes:
            if n in row:
                y = top + row[n] * LANE_H + 2
                out.append(
                    f'<rect class="lane" data-attempt="{a.number}" x="{x1:.1f}" y="{y:.1f}" '
                    f'width="{max(x2 - x1, 1.0):.1f}" height="{LANE_H - 4}" fill="{colour}">'
                    f"<title>{tip}</title></rect>"
                )
    if len(count) > MAX_LANES:
        y = top + len(nodes) * LANE_H + 10
        out.append(f'<text x="{LEFT}" y="{y:.1f}">and {len(count) - MAX_LANES} more nodes</text>')
    return "".join(out), len(nodes) + (1 if len(count) > MAX_LANES else 0)


def _changes(led: Ledger, s: Scale, bottom: float) -> str:
    """A dashed purple line where an attempt started with other code, packages or inputs."""
    out, changed = [], provenance.changed(led.attempts)
    for a in led.attempts:
        found = changed.get(a.number)
        if found is None or a.started is None:
            continue
        x = s.x(a.started)
        tip = esc(f"attempt {a.number}: changed since attempt {found[0]}: {'; '.join(found[1])}")
        out.append(
            f'<line class="changed" data-attempt="{a.number}" x1="{x:.1f}" y1="{TOP}" '
            f'x2="{x:.1f}" y2="{bottom}" stroke="#7b3294" stroke-width="2" '
            f'stroke-dasharray="2 3"><title>{tip}</title></line>'
        )
    return "".join(out)


def chart(led: Ledger, now: float) -> str:
    """The SVG of the run (a note when no attempt has started)."""
    s = _scale(led, now)
    if s is None:
        return '<p class="muted">No attempt has started yet.</p>'
    bottom = TOP + PLOT_H
    end = ends(led, now)
    k = 1.0 if len(end) <= 100 else 0.6
    lanes, rows = _lanes(led, s, end, bottom + 40)
    height = bottom + 40 + rows * LANE_H + 12
    body = [
        _gaps(led, s, end),
        _time_ticks(s),
        _step_ticks(s),
        f'<line class="axis" x1="{LEFT}" y1="{bottom}" x2="{W - RIGHT}" y2="{bottom}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}"/>',
        f'<text x="{LEFT + 4}" y="{TOP + 10}">step</text>',
        *(_attempt(a, s, end[a.number], k) for a in led.attempts if a.started is not None),
        _changes(led, s, bottom),
        lanes,
    ]
    label = esc(f"Steps over time of run {led.run}, {len(led.attempts)} attempt(s)")
    return (
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height}" '
        f'width="{W}" height="{height}" role="img" aria-label="{label}">' + "".join(body) + "</svg>"
    )
