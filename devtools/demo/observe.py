"""Reading what the toy training left behind, and the exact step accounting (pure functions).

The toy (examples/train_toy.py) appends `step=N job=J task=T pid=P` to its steps log after every
step and prints `starting at step N of M (job=J task=T pid=P)`, `saved step N`,
`hanging at step N` and `training finished` to its Slurm output file. The batch script's prelude
prints `rtool: kill switch ... is present; exiting without starting the run` when a task of an
array starts after `rtool stop`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

_STEP = re.compile(r"^step=(\d+) job=(\S+) task=(\S+) pid=(\d+)$")
_START = re.compile(r"starting at step (\d+) of (\d+) \(job=(\S+) task=(\S+) pid=(\d+)\)")
_SAVED = re.compile(r"^saved step (-?\d+)$")
_HANG = re.compile(r"^hanging at step (\d+)$")
_SIGNAL = re.compile(r"batch shell got SIG(\w+)")
KILLED_MARK = "is present; exiting without starting the run"


@dataclass(frozen=True)
class StepLine:
    step: int
    job: str
    task: str
    pid: int


@dataclass
class RunInfo:
    """One run of the toy (one process), from its Slurm output file."""

    pid: int
    job: str
    task: str
    start: int
    saves: list[int] = field(default_factory=list)
    hang: int | None = None
    finished: bool = False
    signal: str | None = None  # the batch shell got this signal while the run was on


@dataclass
class OutputInfo:
    """What one Slurm output file says (a requeued task appends a second part)."""

    runs: list[RunInfo] = field(default_factory=list)
    kill_switch_exits: int = 0


def read_text(path: Path) -> str:
    """The file's text, "" while it does not exist."""
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def parse_steps(text: str) -> list[StepLine]:
    """The steps log, in order; lines that do not parse (a torn last line) are skipped."""
    out = []
    for line in text.splitlines():
        m = _STEP.match(line.strip())
        if m:
            out.append(StepLine(int(m[1]), m[2], m[3], int(m[4])))
    return out


def parse_output(text: str) -> OutputInfo:
    info = OutputInfo()
    run: RunInfo | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if m := _START.search(line):
            run = RunInfo(pid=int(m[5]), job=m[3], task=m[4], start=int(m[1]))
            info.runs.append(run)
        elif KILLED_MARK in line:
            info.kill_switch_exits += 1
        elif run is None:
            continue
        elif m := _SAVED.match(line):
            run.saves.append(int(m[1]))
        elif m := _HANG.match(line):
            run.hang = int(m[1])
        elif line == "training finished":
            run.finished = True
        elif m := _SIGNAL.search(line):
            run.signal = m[1]
    return info


@dataclass
class Accounting:
    """Exact step accounting of one training (all array tasks, all runs)."""

    runs: int  # processes that ran steps
    steps_run: int  # step lines, duplicates included
    distinct_steps: int
    last_step: int  # highest step recorded (-1: none)
    final_checkpoint: int  # step of the last save (-1: none)
    holes: list[int]  # steps up to the final checkpoint never run: progress lost
    discarded: list[int]  # steps run after the final checkpoint (a hung run's unsaved work)
    redone: list[int]  # steps run more than once (work since the last save, after a hang)
    run_twice_after_save: list[int]  # steps run again although a save had covered them
    bad_resumes: list[str]  # runs that did not start right after the last save
    resumes: list[tuple[int, int]] = field(default_factory=list)  # (pid, first step) per run

    @property
    def lost(self) -> int:
        return len(self.holes)

    @property
    def ok(self) -> bool:
        return self.lost == 0 and not self.run_twice_after_save and not self.bad_resumes

    def as_dict(self) -> dict[str, object]:
        """summary.json's `accounting` entry: the fields, `steps_lost` and `ok`."""
        return {**asdict(self), "steps_lost": self.lost, "ok": self.ok}


def account(steps: list[StepLine], saves_by_pid: dict[int, list[int]]) -> Accounting:
    """Check the union of the steps, and that every run resumed right after the last save.

    A step is lost when the final checkpoint covers it but no run ran it. Runs are ordered by
    their first line in the steps log (they run one after another). A run must start at
    (highest step saved by the runs before it) + 1, and must not run a step at or below that
    save. Steps after a hang but before the next save are legitimately redone.
    """
    by_pid: dict[int, list[int]] = {}  # in the order of their first line
    for s in steps:
        by_pid.setdefault(s.pid, []).append(s.step)
    saved = -1
    twice: list[int] = []
    bad: list[str] = []
    resumes: list[tuple[int, int]] = []
    for pid, run in by_pid.items():
        resumes.append((pid, run[0]))
        if run[0] != saved + 1:
            bad.append(f"pid {pid} started at step {run[0]}, the last save was step {saved}")
        twice += [s for s in run if s <= saved]
        saved = max([saved, *saves_by_pid.get(pid, [])])
    counts = Counter(s.step for s in steps)
    last = max(counts, default=-1)
    return Accounting(
        runs=len(by_pid),
        steps_run=len(steps),
        distinct_steps=len(counts),
        last_step=last,
        final_checkpoint=saved,
        holes=[s for s in range(saved + 1) if s not in counts],
        discarded=[s for s in range(saved + 1, last + 1)],
        redone=sorted(s for s, n in counts.items() if n > 1),
        run_twice_after_save=sorted(set(twice)),
        bad_resumes=bad,
        resumes=resumes,
    )


def saves_by_pid(outputs: list[OutputInfo]) -> dict[int, list[int]]:
    return {run.pid: run.saves for out in outputs for run in out.runs}


def compress(steps: list[int]) -> str:
    """`[1, 2, 3, 7]` -> `1-3, 7` (for messages)."""
    parts: list[str] = []
    for s in sorted(set(steps)):
        if parts and parts[-1].split("-")[-1] == str(s - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{s}"
        else:
            parts.append(str(s))
    return ", ".join(parts)
