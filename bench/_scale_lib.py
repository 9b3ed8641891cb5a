"""The pure parts of bench/scale.py: Slurm call logs, attempt records, growth and verdicts."""

from __future__ import annotations

import json
import os
import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: The Slurm clients a PATH wrapper logs (each call appended to the log, then the real one run).
CLIENTS = ("squeue", "sacct", "sinfo", "scontrol", "sbatch", "scancel", "srun")
SEP = "\x1f"  # between the arguments of one logged call (never in what rtool passes)


def wrapper_script(real: str, log: Path) -> str:
    """A /bin/sh wrapper that appends `name SEP arg SEP arg ...` to `log` in one write (calls
    run side by side must not interleave), then execs `real`."""
    return (
        "#!/bin/sh\n"
        f"line={shlex.quote(Path(real).name)}\n"
        "sep=$(printf '\\037')\n"
        'for a in "$@"; do line="$line$sep$a"; done\n'
        f"printf '%s\\n' \"$line\" >> {shlex.quote(str(log))}\n"
        f'exec {shlex.quote(real)} "$@"\n'
    )


def node_state_counts(env: dict[str, str]) -> dict[str, int]:
    """{state: nodes} as `sinfo -N` shows them (each node once: one partition)."""
    import subprocess

    out = subprocess.run(
        ["sinfo", "-N", "-h", "-o", "%N %T"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout
    return dict(Counter(line.split()[1] for line in out.splitlines() if len(line.split()) > 1))


def parse_call_log(text: str) -> list[list[str]]:
    """The calls a wrapper log holds, each as its argv."""
    return [line.split(SEP) for line in text.splitlines() if line]


def count_calls(calls: Sequence[Sequence[str]]) -> Counter[str]:
    """Calls by command: `squeue`, `sacct`, ... and `scontrol show`/`scontrol update`."""
    return Counter(c[0] if c[0] != "scontrol" or len(c) < 2 else f"scontrol {c[1]}" for c in calls)


def reads_only(calls: Counter[str]) -> bool:
    """True when a sweep made only its reads: one squeue, at most one sinfo and one sacct."""
    return (
        calls["squeue"] == 1
        and set(calls) <= {"squeue", "sinfo", "sacct"}
        and (max(calls.values()) == 1)
    )


def parse_sizes(text: str) -> list[int]:
    """`64,256` -> [64, 256] (sorted, each at least 1); argparse's error otherwise."""
    import argparse

    try:
        got = sorted({int(x) for x in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of sizes: {text!r}") from None
    if not got or got[0] < 1:
        raise argparse.ArgumentTypeError(f"not a list of sizes: {text!r}")
    return got


def listed_attempts(history: str) -> list[int]:
    """The attempt numbers `rtool history` lists (its table's rows, compacted ones included)."""
    out = []
    for line in history.splitlines():
        first = line.split(maxsplit=1)[0] if line.strip() else ""
        if first.isdigit() and line[:1].isdigit():
            out.append(int(first))
    return out


def attempt_records(n: int, job_id: int = 4242, t0: float = 1.7e9, nodes: int = 16) -> str:
    """A batch script's records (rtool/runs/attempt_records.py) of `n` attempts of one requeued job:
    a start and an end line each, the next attempt starting 60 s after the previous ended."""
    lines = []
    for k in range(n):
        start = t0 + k * 660.0
        common = {"job_id": str(job_id), "restart": k, "node": "n1", "nodelist": f"n[1-{nodes}]"}
        lines.append(json.dumps({"event": "start", **common, "time": start}))
        rc = 0 if k == n - 1 else 143
        lines.append(json.dumps({"event": "end", **common, "time": start + 600.0, "rc": rc}))
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Growth:
    """How a cost grew from the smallest to the largest size, against how the work grew."""

    work: float  # largest size / smallest size
    cost: float  # cost at the largest / cost at the smallest

    @property
    def ok(self) -> bool:
        """No faster than the work (10% slack for a shared machine's noise)."""
        return self.cost <= self.work * 1.1


def growth(sizes: Sequence[float], costs: Sequence[float], floor: float = 1e-3) -> Growth:
    """Growth of `costs` over `sizes` (ascending); costs below `floor` seconds count as it."""
    lo, hi = max(costs[0], floor), max(costs[-1], floor)
    return Growth(work=sizes[-1] / sizes[0], cost=hi / lo)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def goal_line(name: str, ok: bool, detail: str) -> str:
    return f"{verdict(ok)}  {name}: {detail}"
