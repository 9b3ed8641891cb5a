"""A run's two names, and what `rtool submit` recorded about it.

The run (`rtool submit --run`) and its attempts' Slurm job name agree by default (either one
given names both). Each submission is recorded in the state dir (`submit/<hash of the
names>.json`), so every command finds a run by either name: the run's own name wins over a job
name; of several submissions, the newest.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rtool.core.state import StateDir

SUBMIT_DIR = "submit"
#: Records read when looking a name up (newest first): a bound on a state dir used for years
#: (bench/names_bench.py: about 25 us a record).
MAX_RECORDS = 2000
_PLAIN = re.compile(r"[A-Za-z0-9_.+=@:-]{1,100}", re.ASCII)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.+=@:-]", re.ASCII)


@dataclass(frozen=True)
class Submission:
    """One `rtool submit` of a run (paths absolute)."""

    run: str
    job_name: str
    job_id: str
    workdir: str
    kill_switch: str
    save_switch: str
    array: str | None = None
    heartbeat: str | None = None
    #: The attempts' log, as Slurm names it (`/runs/llama-%A_%a.out`: %j %A %a %x).
    log: str | None = None
    submitted: float = 0.0
    #: The launcher's per-rank log folder (torchrun --log-dir), absolute.
    launcher_logs: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Submission | None:
        """A record, or None (records before rtool 0.3 have no `run`: it was the job name)."""
        if not isinstance(data, dict):
            return None
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in fields}
        values.setdefault("run", values.get("job_name"))
        values["submitted"] = float(values.get("submitted") or 0.0)
        strings = ("run", "job_name", "job_id", "workdir", "kill_switch", "save_switch")
        if not all(isinstance(values.get(k), str) and values[k] for k in strings):
            return None
        try:
            return cls(**values)
        except TypeError:
            return None


def file_part(name: str) -> str:
    """`name` as one safe part of a file name (a switch, a ledger): itself when it is plain,
    else its plain characters and a short hash (never empty, `.` or `..`, never a `/`)."""
    if _PLAIN.fullmatch(name) and name.strip("."):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    kept = _UNSAFE.sub("_", name).strip(".")[:80]
    return f"{kept or 'run'}-{digest}"


def record_file(run: str, job_name: str) -> str:
    """State-dir file of the newest submission of a run under a job name (any name is safe;
    a run named like its jobs keeps the file name of the records before rtool 0.3)."""
    key = job_name if run == job_name else f"{run}\0{job_name}"
    return f"{SUBMIT_DIR}/" + hashlib.sha256(key.encode()).hexdigest()[:20] + ".json"


def save(state: StateDir, sub: Submission) -> None:
    state.write_json(record_file(sub.run, sub.job_name), sub.to_json())


def _newest_first(state: StateDir, limit: int) -> Iterator[Submission]:
    """The recorded submissions, newest file first (at most `limit` files read, lazily)."""
    folder = state.path / SUBMIT_DIR
    try:
        entries = [e for e in os.scandir(folder) if e.name.endswith(".json") and e.is_file()]
    except OSError:
        return
    entries.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime, reverse=True)
    for entry in entries[:limit]:
        sub = Submission.from_json(state.read_json(f"{SUBMIT_DIR}/{entry.name}", default={}))
        if sub is not None:
            yield sub


def submissions(state: StateDir, limit: int = MAX_RECORDS) -> list[Submission]:
    """The recorded submissions, newest first (at most `limit` files read)."""
    return sorted(_newest_first(state, limit), key=lambda s: s.submitted, reverse=True)


def find(state: StateDir, name: str, subs: list[Submission] | None = None) -> Submission | None:
    """The newest submission of the run called `name`, else of the jobs called `name` (`subs`:
    the submissions already read; else the records are read newest first until it turns up)."""
    by_job = None
    for sub in _newest_first(state, MAX_RECORDS) if subs is None else subs:
        if sub.run == name:
            return sub
        if by_job is None and sub.job_name == name:
            by_job = sub
    return by_job


def known(state: StateDir, shown: int = 8) -> str:
    """The runs the state dir knows, for an error message: `llama-7b (job 12, /runs), ...`."""
    seen: dict[str, Submission] = {}
    for sub in submissions(state):
        seen.setdefault(sub.run, sub)
    if not seen:
        return f"no run was submitted with rtool submit from this account (state dir {state.path})"
    items = []
    for sub in list(seen.values())[:shown]:
        jobs = "" if sub.job_name == sub.run else f"jobs named {sub.job_name}, "
        items.append(f"{sub.run} ({jobs}job {sub.job_id}, from {sub.workdir})")
    more = f", and {len(seen) - shown} more" if len(seen) > shown else ""
    return "known runs: " + ", ".join(items) + more


def watch_base(state: StateDir, name: str, entries: list[Any]) -> dict[str, Any]:
    """What a run watch of `name` starts from (then the command's flags): the `[[watch.run]]`
    entry of that run or job name, else the recorded submission, else the name alone."""
    for attr in ("name", "job_name"):
        entry = next((e for e in entries if getattr(e, attr) == name), None)
        if entry is not None:
            base: dict[str, Any] = entry.model_dump()
            break
    else:
        base = {"name": name}
    sub = find(state, base.get("job_name") or base["name"]) or find(state, name)
    if sub is None:
        return base
    found = {"name": sub.run, "job_name": sub.job_name if sub.job_name != sub.run else None}
    found |= {"heartbeat": sub.heartbeat, "log": sub.log, "launcher_logs": sub.launcher_logs}
    return {**{k: v for k, v in found.items() if v is not None}, **_set(base)}


def _set(base: dict[str, Any]) -> dict[str, Any]:
    """The keys of a config entry that say something (the name alone is only the name asked)."""
    if set(base) == {"name"}:
        return {}
    return {k: v for k, v in base.items() if v is not None}
