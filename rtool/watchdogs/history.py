"""Per-target histories in the state dir (for trends), and the pure trend arithmetic."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from rtool.core.state import StateDir


def slug(what: str) -> str:
    """A file name for `what` (readable prefix + short hash, so distinct paths never collide)."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", what).strip("_")[:40] or "root"
    return f"{readable}-{hashlib.sha1(what.encode()).hexdigest()[:8]}"


def append(
    state: StateDir, folder: str, what: str, sample: dict[str, float], window: float
) -> list[dict[str, float]]:
    """Append `sample` (with a `t` key) and keep the samples of the last `window` seconds."""
    return append_many(state, folder, [(what, sample)], {what: window})[what]


def append_many(
    state: StateDir,
    folder: str,
    items: list[tuple[str, dict[str, float]]],
    windows: dict[str, float],
) -> dict[str, list[dict[str, float]]]:
    """`append` for several targets under one lock; returns each target's kept samples."""
    out: dict[str, list[dict[str, float]]] = {}
    if not items:
        return out
    with state.lock(f"history-{folder}"):
        for what, sample in items:
            rel = f"watch/{folder}/{slug(what)}.json"
            data: Any = state.read_json(rel, {})
            samples = data.get("samples", []) if isinstance(data, dict) else []
            samples = samples if isinstance(samples, list) else []
            samples = [s for s in samples if isinstance(s, dict) and _number(s.get("t"))]
            samples.append(sample)
            samples = [s for s in samples if s["t"] >= sample["t"] - windows[what]][-2000:]
            state.write_json(rel, {"what": what, "samples": samples})
            out[what] = samples
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def read_all(state: StateDir, folder: str) -> dict[str, list[dict[str, float]]]:
    """Every stored history of `folder` (`disk`, `memory`): watched thing -> samples (read-only)."""
    out: dict[str, list[dict[str, float]]] = {}
    for path in sorted((state.path / "watch" / folder).glob("*.json")):
        data: Any = state.read_json(str(path.relative_to(state.path)), {})
        if isinstance(data, dict) and isinstance(data.get("what"), str):
            samples = data.get("samples", [])
            samples = samples if isinstance(samples, list) else []
            out[data["what"]] = [s for s in samples if isinstance(s, dict) and _number(s.get("t"))]
    return out


def slope(samples: list[dict[str, float]], key: str) -> float | None:
    """Least-squares rate of change of `key` per second, or None with fewer than 2 points."""
    points = [(s["t"], s[key]) for s in samples if _number(s.get(key))]
    if len(points) < 2:
        return None
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return None
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / var


def trend(
    samples: list[dict[str, float]], key: str, min_span: float, min_points: int = 3
) -> float | None:
    """The slope when the history is long enough to trust, else None."""
    if len(samples) < min_points or samples[-1]["t"] - samples[0]["t"] < min_span:
        return None
    return slope(samples, key)
