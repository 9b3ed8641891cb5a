"""The picture of bench/goodput.py: training step against time for each setup, faults marked.

One panel per queue wait; in each, plain sbatch, rtool and the ideal run (x: seconds since the
setup's first step, y: the step being trained: a drop is work done again, a flat stretch is
time lost), the moment each fault was injected marked on the line of the setup it hit. Written
with matplotlib's Agg backend (no display needed).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bench.goodput_report import Outcome

COLORS = {"plain": "#c0392b", "rtool": "#2471a3", "ideal": "#7f8c8d"}
MARKERS = {"hang": "X", "crash": "v", "node failure": "s"}


def plot(panels: Sequence[tuple[float, dict[str, Outcome]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(panels), 1, figsize=(9, 3.6 * len(panels)), squeeze=False, constrained_layout=True
    )
    for ax, (wait, runs) in zip(axes[:, 0], panels, strict=True):
        for mode, o in runs.items():
            if not o.steps:
                continue
            t0 = o.steps[0].t
            xs = [s.t - t0 for s in o.steps]
            ys = [s.step for s in o.steps]
            good = f"goodput {o.goodput:.3f}" if o.goodput is not None else ""
            if wait and o.wall_goodput is not None:
                good += f", wall {o.wall_goodput:.3f}"
            ax.plot(xs, ys, ".", ms=1.2, color=COLORS.get(mode), label=f"{mode} ({good})")
            for fault, t in o.faults.items():
                before = [s for s in o.steps if s.t <= t]
                at = before[-1].step if before else 0
                ax.plot([t - t0], [at], MARKERS.get(fault, "o"), ms=8, color=COLORS.get(mode),
                        markeredgecolor="black", label=f"{fault} ({mode})")  # fmt: skip
        title = f"queue wait {wait:g} s per new allocation" if wait else "no queue wait"
        ax.set_title(f"bench/goodput.py: {title}")
        ax.set_xlabel("seconds since the first step")
        ax.set_ylabel("training step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right", ncol=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
