"""What bench/goodput.py measured, and how it prints it: one `Outcome` per setup and queue wait.

Per fault (the time limits too): the steps done again after it ("redone") and the time from
the last step before it to the first step after it ("to train"); per setup: goodput over the
allocated time (what the GPU hours bought) and over the wall time from the first start to the
finish (what the user waited, queue included).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from bench.goodput_target import (
    Latency,
    first_step_times,
    fraction_line,
    goodput,
    margin_line,
    startup_latencies,
    target_lines,
)

FAULTS = ("hang", "crash", "node failure")


@dataclass
class Step:
    step: int
    t: float
    pid: int


@dataclass
class Outcome:
    mode: str
    wait: float = 0.0  # the queue wait of the model (bench/goodput_queue.py)
    faults: dict[str, float] = field(default_factory=dict)  # fault -> time injected
    seen: dict[str, float] = field(default_factory=dict)  # fault -> time rtool reported it
    steps: list[Step] = field(default_factory=list)
    allocated: float = 0.0
    finished_at: float | None = None
    restarts: list[tuple[str, int, float]] = field(default_factory=list)  # cause, redone, gap
    revive: dict[str, float] = field(default_factory=dict)  # failed node -> when to revive
    starts: list[float] = field(default_factory=list)  # sacct Start of every attempt
    total: int = 0  # the training's steps
    step_s: float = 0.0
    hang_after: float = 0.0  # the shim's hang threshold (rtool): part of a hang's time back

    @property
    def goodput(self) -> float | None:
        return goodput(len({s.step for s in self.steps}), self.step_s, self.allocated)

    @property
    def wall(self) -> float | None:
        """From the first attempt's start to the training's end (queue waits included)."""
        if not self.finished_at or not self.starts:
            return None
        return self.finished_at - min(self.starts)

    @property
    def wall_goodput(self) -> float | None:
        wall = self.wall
        return goodput(len({s.step for s in self.steps}), self.step_s, wall) if wall else None

    def to_json(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "wait": self.wait,
            "faults": self.faults,
            "steps": [[s.step, s.t, s.pid] for s in self.steps],
            "starts": self.starts,
            "finished_at": self.finished_at,
            "allocated": self.allocated,
            "goodput": self.goodput,
            "wall_goodput": self.wall_goodput,
        }


def read_steps(path: Path) -> list[Step]:
    out = []
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text().splitlines():
            parts = dict(p.split("=", 1) for p in line.split() if "=" in p)
            with contextlib.suppress(KeyError, ValueError):
                out.append(Step(int(parts["step"]), float(parts["t"]), int(parts["pid"])))
    return out


def restarts(out: Outcome) -> list[tuple[str, int, float]]:
    """(cause, steps redone, seconds from the last step to training again) per process change."""
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
    """The side-by-side table, one summary line per setup, the differences to plain."""
    outs = list(runs.values())
    print(f"{'fault':<16} | " + " | ".join(
        f"{o.mode + ': redone':>6} {'to alert':>9} {'to train':>9}" for o in outs))  # fmt: skip
    for cause in ("time limit", *FAULTS):
        n = max(sum(r[0] == cause for r in o.restarts) for o in outs)
        for i in range(max(n, 1)):
            label = f"{cause} #{i + 1}" if n > 1 else cause
            print(f"{label:<16} | " + "      | ".join(row(o, cause, i) for o in outs))
    for o in outs:
        uniq = len({s.step for s in o.steps})
        redone = len(o.steps) - uniq
        good = f"{o.goodput:.3f}" if o.goodput is not None else "-"
        wgood = f"{o.wall_goodput:.3f}" if o.wall_goodput is not None else "-"
        print(
            f"{o.mode:>6}: {uniq}/{o.total} steps, {redone} done twice, {len(o.restarts)} "
            f"restarts, allocated {o.allocated:.0f}s, wall {o.wall or float('nan'):.0f}s, "
            f"goodput {good} (allocated), {wgood} (wall)"
        )
    plain, rt = runs.get("plain"), runs.get("rtool")
    if plain and rt and plain.goodput and rt.goodput:
        print(f"goodput ratio rtool/plain: {rt.goodput / plain.goodput:.2f} (allocated)")
        print(margin_line(rt.goodput, plain.goodput, "allocated"))
        if plain.wall_goodput and rt.wall_goodput:
            print(margin_line(rt.wall_goodput, plain.wall_goodput, "wall"))


def report_target(runs: dict[str, Outcome]) -> None:
    """The targets: rtool vs the ideal run, each fault vs the start-up latency."""
    rt, ideal = runs.get("rtool"), runs.get("ideal")
    latency = Latency(())
    if ideal:
        firsts = first_step_times((s.t, s.pid) for s in ideal.steps)
        latency = startup_latencies(ideal.starts, firsts)
    print(fraction_line(rt.goodput if rt else None, ideal.goodput if ideal else None))
    gaps = [(cause, gap) for cause, _, gap in rt.restarts if cause in FAULTS] if rt else []
    missing = [f for f in FAULTS if rt and f not in {g[0] for g in gaps}]
    for line in target_lines(gaps, latency, rt.hang_after if rt else 0.0):
        print(line)
    if missing:
        print(f"  not back to training (no restart seen): {', '.join(missing)}")
