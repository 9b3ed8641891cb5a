"""docs/scale.png: bench/scale.py's cost curves, one panel per axis, against the work."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Axis:
    """One axis of the bench: its sizes and, per curve, the seconds at each size."""

    title: str
    unit: str
    sizes: list[int]
    curves: dict[str, list[float]] = field(default_factory=dict)
    reference: str = ""  # the curve the dashed "grows like the work" line starts from


def draw(path: Path, axes: list[Axis], note: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, panels = plt.subplots(1, len(axes), figsize=(5.2 * len(axes), 4.4))
    for ax, axis in zip(panels if len(axes) > 1 else [panels], axes, strict=True):
        for label, secs in axis.curves.items():
            ax.plot(axis.sizes, [s * 1000 for s in secs], marker="o", label=label)
        if axis.reference in axis.curves:
            first = axis.curves[axis.reference][0] * 1000
            line = [first * n / axis.sizes[0] for n in axis.sizes]
            ax.plot(axis.sizes, line, "k:", label=f"{axis.reference} x work (linear)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(axis.sizes, [str(n) for n in axis.sizes])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(axis.unit)
        ax.set_ylabel("ms (median)")
        ax.set_title(axis.title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(note, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
