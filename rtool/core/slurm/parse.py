"""Pure parsers of Slurm command output (squeue -h -o, scontrol show job, sbatch --parsable).

No subprocess here: everything is a function of text, unit tested on captured output.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from datetime import datetime

#: squeue fields, in order; the job name is last so a `|` inside it cannot shift the others.
SQUEUE_FIELDS: list[tuple[str, str]] = [
    ("job_id", "%i"),
    ("array_job_id", "%F"),  # the array's id (%A is a running task's own id)
    ("array_task", "%K"),
    ("state", "%T"),
    ("reason", "%r"),
    ("user", "%u"),
    ("partition", "%P"),
    ("nodes", "%D"),
    ("time_used", "%M"),
    ("time_limit", "%l"),
    ("start_time", "%S"),
    ("submit_time", "%V"),
    ("nodelist", "%N"),
    ("name", "%j"),
]
SQUEUE_DELIM = "|"
SQUEUE_FORMAT = SQUEUE_DELIM.join(code for _, code in SQUEUE_FIELDS)

#: Job states of a job that runs (or holds its allocation while it starts or ends).
RUNNING_STATES = frozenset(
    {"RUNNING", "COMPLETING", "CONFIGURING", "RESIZING", "SIGNALING", "STAGE_OUT"}
)
#: Job states of a job that waits in the queue (or is suspended) and may still run.
QUEUED_STATES = frozenset(
    {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED", "STOPPED"}
)
#: Job states of a job that is still queued or running.
ACTIVE_STATES = RUNNING_STATES | QUEUED_STATES

_TASK_RANGE = re.compile(r"(\d{1,9})(?:-(\d{1,9}))?(?::(\d{1,9}))?", re.ASCII)
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", re.ASCII)
_NONE_WORDS = {"", "N/A", "NONE", "(NULL)", "UNKNOWN", "INVALID", "UNLIMITED", "NOT_SET"}


class ParseError(ValueError):
    """Output that does not have the expected shape."""


@dataclass(frozen=True)
class SqueueJob:
    """One line of `squeue -h -o SQUEUE_FORMAT`."""

    job_id: str  # as shown: "90", "88_3", "88_[2-10%1]"
    array_job_id: str  # "88", also for a running task 88_3 with its own id 91 (= job_id if plain)
    array_task: str | None  # "3", "2-10%1" (pending tasks) or None for plain jobs
    state: str  # RUNNING, PENDING, ...
    reason: str | None  # None when Slurm says "None"
    user: str
    partition: str
    nodes: int
    time_used: float | None
    time_limit: float | None  # None = UNLIMITED
    start_time: datetime | None
    submit_time: datetime | None
    nodelist: str
    name: str

    @property
    def is_array(self) -> bool:
        return self.array_task is not None

    @property
    def pending_tasks(self) -> str | None:
        """For a pending array record `88_[2-10%1]`, the task spec `2-10%1`."""
        if self.array_task and "[" in self.job_id:
            return self.array_task.strip("[]")
        return None

    @property
    def tasks(self) -> int:
        """How many jobs this record stands for: the pending tasks of an array record
        (`88_[2-10%1]` 9, `2,5,7-8` 4; parts that cannot be read are not counted, at least
        1), else 1."""
        spec = self.pending_tasks
        if spec is None:
            return 1
        total = 0
        for part in spec.split("%", 1)[0].split(","):
            m = _TASK_RANGE.fullmatch(part.strip())
            if m:
                lo, hi, step = int(m[1]), int(m[2] or m[1]), int(m[3] or 1)
                total += len(range(lo, hi + 1, max(1, step)))
        return max(total, 1)


@dataclass(frozen=True)
class SubmitResult:
    job_id: str
    cluster: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=4096)
def parse_slurm_duration(text: str) -> float | None:
    """Seconds in a Slurm time: `MM`, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS`;
    None for `UNLIMITED`, `INVALID`, `N/A`."""
    s = text.strip()
    if s.upper() in _NONE_WORDS:
        return None
    m = re.fullmatch(r"(?:(\d{1,6})-)?(\d{1,9})(?::(\d{1,9}))?(?::(\d{1,9}))?", s, re.ASCII)
    if not m:
        raise ParseError(f"not a Slurm time: {s!r}")
    days, a, b, c = m.groups()
    nums = [int(x) for x in (a, b, c) if x is not None]
    if days is not None:  # D-HH[:MM[:SS]]
        hh, mm, ss = [*nums, 0, 0][:3]
        return float(int(days) * 86400 + hh * 3600 + mm * 60 + ss)
    if len(nums) == 1:  # MM
        return float(nums[0] * 60)
    if len(nums) == 2:  # MM:SS
        return float(nums[0] * 60 + nums[1])
    return float(nums[0] * 3600 + nums[1] * 60 + nums[2])


def format_slurm_duration(seconds: float) -> str:
    """`D-HH:MM:SS` (or `HH:MM:SS` under a day), as sbatch --time accepts."""
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


# Cached: a 10,000-job queue has few distinct times (strptime and the zone lookup are slow).
@functools.lru_cache(maxsize=4096)
def parse_slurm_timestamp(text: str) -> datetime | None:
    """`2026-11-21T19:37:00` (local time, as Slurm prints it) or None for N/A/Unknown."""
    s = text.strip()
    if s.upper() in _NONE_WORDS:
        return None
    if not _TIMESTAMP.fullmatch(s):
        raise ParseError(f"not a Slurm timestamp: {s!r}")
    try:
        return datetime.fromisoformat(s).astimezone()
    except ValueError:
        raise ParseError(f"not a Slurm timestamp: {s!r}") from None


def _opt(text: str) -> str | None:
    s = text.strip()
    return None if s.upper() in _NONE_WORDS else s


def parse_squeue_line(line: str) -> SqueueJob:
    parts = line.split(SQUEUE_DELIM, len(SQUEUE_FIELDS) - 1)
    if len(parts) != len(SQUEUE_FIELDS):
        raise ParseError(f"squeue line has {len(parts)} fields, expected {len(SQUEUE_FIELDS)}")
    # positional, in SQUEUE_FIELDS order (a 10,000-job queue is parsed on every sweep)
    job, array, task, state, reason, user, part, nodes, used, limit, start, submit, nl, name = parts
    nodes = nodes.strip()
    return SqueueJob(
        job.strip(),
        array.strip(),
        _opt(task),
        state.strip(),
        _opt(reason),
        user.strip(),
        part.strip(),
        int(nodes) if nodes.isdigit() else 0,
        parse_slurm_duration(used),
        parse_slurm_duration(limit),
        parse_slurm_timestamp(start),
        parse_slurm_timestamp(submit),
        nl.strip(),
        name.rstrip("\n"),
    )


def parse_squeue(text: str) -> list[SqueueJob]:
    """All jobs in `squeue -h -o SQUEUE_FORMAT` output (blank lines ignored)."""
    return [parse_squeue_line(line) for line in text.splitlines() if line.strip()]


_KEY = re.compile(r"(?:(?<=\s)|^)([A-Za-z][\w:/.\-]*)=")


#: Keys that decide whose job it is: taken only from where Slurm prints them (see below).
_OWNER_KEYS = ("UserId", "GroupId")


def _pairs(line: str) -> list[tuple[str, str]]:
    matches = list(_KEY.finditer(line))
    out = []
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        out.append((m.group(1), line[m.end() : end].strip()))
    return out


def parse_scontrol_record(text: str) -> dict[str, str]:
    """One `scontrol show job` record as {key: value} (values as printed, stripped).

    Free text (JobName, Comment, WorkDir, Command, StdOut...) may hold ` UserId=root(0)`: the
    FIRST occurrence of a key counts, JobName is the rest of the `JobId=` line, and the owner
    keys (UserId, GroupId) count only from the line right after it, starting with `UserId=`
    (where both releases print them); a record without that line has no owner."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    first = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("JobId=")), None)
    for i, line in enumerate(lines):
        job, sep, name = line.strip().partition(" JobName=") if i == first else ("", "", "")
        if sep and " " not in job:  # the job's name is the rest of its line, whatever it holds
            out.setdefault("JobId", job.removeprefix("JobId="))
            out.setdefault("JobName", name)
            continue
        for key, value in _pairs(line):
            out.setdefault(key, value)
    if first is None:
        return out
    for key in _OWNER_KEYS:
        out.pop(key, None)
    nxt = lines[first + 1].lstrip() if first + 1 < len(lines) else ""
    if nxt.startswith("UserId="):
        pinned = dict(_pairs(nxt))
        out.update({k: pinned[k] for k in _OWNER_KEYS if k in pinned})
    return out


def parse_scontrol_show_job(text: str) -> list[dict[str, str]]:
    """Every record of `scontrol show job` output (an array gives one per task or task range)."""
    records = re.split(r"\n\s*\n", text.strip())
    return [parse_scontrol_record(r) for r in records if "JobId=" in r]


def parse_sbatch_parsable(text: str) -> SubmitResult:
    """`sbatch --parsable` prints `jobid` or `jobid;cluster`."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise ParseError("sbatch printed no job id")
    job, _, cluster = lines[-1].partition(";")
    if not job.isdigit():
        raise ParseError(f"sbatch printed no job id: {lines[-1]!r}")
    return SubmitResult(job_id=job, cluster=cluster or None)


_HOST_GROUP = re.compile(r"\[([^\[\]]*)\]")


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets: `n[1,3],gpu01` -> [`n[1,3]`, `gpu01`]."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ParseError(f"unbalanced ']' in host list {_clipped(text)!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ParseError(f"unbalanced '[' in host list {_clipped(text)!r}")
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


#: At most this many hosts in one expanded host list (the largest Slurm clusters have tens of
#: thousands of nodes): `n[0-99999][0-99999]` is refused, never expanded.
MAX_HOSTS = 100_000


def _clipped(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _ranges(spec: str, whole: str) -> list[tuple[int, int, int]]:
    """The (low, high, zero-padding width) of each item of one bracket group."""
    out = []
    for item in spec.split(","):
        m = re.fullmatch(r" {0,8}(\d{1,18})(?:-(\d{1,18}))? {0,8}", item)
        if not m or int(m.group(2) or m.group(1)) < int(m.group(1)):
            raise ParseError(f"bad range {_clipped(item)!r} in host list {_clipped(whole)!r}")
        lo, hi = m.group(1), m.group(2) or m.group(1)
        width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
        out.append((int(lo), int(hi), width))
    return out


def expand_hostlist(text: str) -> list[str]:
    """Slurm's compact host list, expanded in order: `n[1-3],gpu01` -> n1, n2, n3, gpu01.

    Handles zero padding (`gpu[08-10]`), lists inside brackets (`n[1,3-4]`) and several bracket
    groups in one name (`r[1-2]n[1-2]` -> r1n1, r1n2, r2n1, r2n2). "None assigned", "(null)" and
    "" give []. A list of more than `MAX_HOSTS` hosts raises ParseError (counted before any
    name is built).
    """
    s = text.strip()
    if not s or s.lower() in {"none assigned", "(null)", "none", "n/a"}:
        return []
    hosts: list[str] = []
    for item in _split_top(s):
        groups, pieces, pos = [], [], 0
        for m in _HOST_GROUP.finditer(item):
            pieces.append(item[pos : m.start()])
            groups.append(_ranges(m.group(1), text))
            pos = m.end()
        tail = item[pos:]
        if "[" in tail or "]" in tail:
            raise ParseError(f"bad host list {_clipped(text)!r}")
        count = 1
        for ranges in groups:
            count *= sum(hi - lo + 1 for lo, hi, _ in ranges)
            if len(hosts) + count > MAX_HOSTS:
                raise ParseError(f"host list {_clipped(text)!r} names more than {MAX_HOSTS} hosts")
        names = [""]
        for prefix, ranges in zip(pieces, groups, strict=True):
            parts = [str(n).zfill(w) for lo, hi, w in ranges for n in range(lo, hi + 1)]
            names = [n + prefix + x for n in names for x in parts]
        hosts.extend(n + tail for n in names)
    return hosts
