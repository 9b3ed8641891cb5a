"""The root cause of an attempt: every signature match over a bounded tail of its logs, then the
most specific (lowest tier), earliest line, with the rank and node that printed it.

Lines come as read (`rtool.runs.logtail.cause_lines`); a line `==> PATH (task T, node N) <==`
starts the lines of one per-task log. A line's origin is read from the prefixes launchers put
before it: `[rank3]:` (PyTorch), `3: ` (srun -l), `[default3]:` (torchrun --tee, a local
rank), `[1,3]<stdout>:` (mpirun), a timestamp, and the host names NCCL, srun and the kernel
print (`n2:1234:1240 [0] NCCL WARN`, `srun: error: n2: task 3:`, `Nov 23 14:00 n2 kernel:`).
Across ranks the first failure is the cause and the rest are symptoms: a tier-3 match (a rank
left waiting in a collective, Slurm's cancel line) yields to Slurm's final state and to the
earliest Python exception that is not itself a follower (torchrun's ChildFailedError, a peer's
closed connection).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rtool.core import alert
from rtool.runs.signatures.base import MAX_LINE, ROOT, SYMPTOM, Pattern, Signature

_HEADER = re.compile(
    r"^==> .{1,4000} \((?:task (\d{1,6}))?,? ?(?:rank (\d{1,6}))?,? ?"
    r"(?:node ([\w.-]{1,100}))?\) <==$"
)
_PREFIX = re.compile(
    r"^(?:\[rank(?P<rank>\d{1,6})\]: ?|\[1,(?P<mpi>\d{1,6})\]<std(?:out|err)>: ?"
    r"|(?P<task>\d{1,6}): |\[default(?P<local>\d{1,4})\]: ?)"
)
_STAMP = re.compile(r"^\[?(\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?)\]?,? ?")
_HOSTS = (
    re.compile(r"^ {0,8}(?P<host>[\w.-]{1,100}):\d{1,9}:\d{1,9} \[\d{1,3}\] "),
    re.compile(r"\bsrun: error: (?P<host>[\w.-]{1,100}): task (?P<task>\d{1,6}):"),
    re.compile(r"^\w{3} {1,2}\d{1,2} [\d:]{8} (?P<host>[\w.-]{1,100}) kernel:"),
    re.compile(r"^ {0,4}host {0,8}: (?P<host>[\w.-]{1,100})$"),
)
_TB_START = "Traceback (most recent call last)"
_EXC = re.compile(r"^([A-Za-z_][\w.]{0,200}(?:Error|Exception|Interrupt|Exit))\b(:.*)?$")
_WHAT = re.compile(r"^ {0,8}what\(\): {1,4}(\S.*)$")
#: Exceptions that report another rank's (or process's) failure, never the cause.
_FOLLOWERS = re.compile(
    r"ChildFailedError|SignalException|Connection (?:closed|reset) by peer|KeyboardInterrupt"
    r"|SystemExit|CalledProcessError"
)
_TORCHRUN_RANK = re.compile(r"^ {0,4}rank {0,8}: (\d{1,6}) \(local_rank")
#: A stack frame (faulthandler's or Python's) inside a collective: the rank was waiting.
_WAITING = re.compile(r'File "[^"]{0,300}/torch/(?:distributed|autograd|nn/parallel)/')
#: The shim's lines when it ends a rank that made no step (its own hang, or another rank's).
_STUCK = frozenset({"hang", "peer-failed"})
#: Lines after a hang line searched for its stacks.
_STACK_LINES = 400
#: A path in a line (a checkpoint's, when it ends like one or names a DeepSpeed step folder).
_PATH = re.compile(r"(?<![\w.@%+=:,~-])[\w.@%+=:,~-]{0,100}(?:/[\w.@%+=:,~-]{1,200}){1,40}")
_CKPT = re.compile(r"\.(?:pt|pth|ckpt|bin|safetensors)$|/global_step\d{1,12}(?:/|$)")
_CKPT_BACK = 40


@dataclass
class Origin:
    """Who printed a line, as far as its prefixes and its log file say."""

    rank: int | None = None
    task: int | None = None
    host: str | None = None
    stamp: str | None = None


@dataclass(frozen=True)
class Hit:
    tier: int
    seq: int
    line: str
    origin: Origin
    pattern: Pattern | None = None
    label: str = ""


@dataclass
class _Scan:
    """What one pass over the lines found."""

    hits: list[Hit] = field(default_factory=list)
    exceptions: list[Hit] = field(default_factory=list)
    tasks: set[int] = field(default_factory=set)
    summary: Origin | None = None  # torchrun's "Root Cause (first observed failure)"
    lines: Sequence[str] = ()


def origin_of(
    line: str, file_task: int | None, file_node: str | None, file_rank: int | None = None
) -> tuple[Origin, str]:
    """The origin of a line and its text without the launcher's prefix."""
    o = Origin(rank=file_rank, task=file_task, host=file_node)
    body = line
    for _ in range(4):  # prefixes nest: "3: 2026-11-23 14:00:00 [rank3]: ..."
        stamp = _STAMP.match(body)
        if stamp:
            o.stamp = o.stamp or stamp.group(1)
            body = body[stamp.end() :]
            continue
        m = _PREFIX.match(body)
        if not m:
            break
        if m.group("rank") or m.group("mpi"):
            o.rank = int(m.group("rank") or m.group("mpi"))
        elif m.group("task"):
            o.task = int(m.group("task"))
        body = body[m.end() :]
    for rx in _HOSTS:
        h = rx.search(body)
        if h:
            o.host = h.group("host")
            if "task" in rx.groupindex and h.group("task"):
                o.task = int(h.group("task"))
            break
    return o, body


def scan(lines: Sequence[str], patterns: Sequence[Pattern]) -> _Scan:
    """Every signature match, Python exception and C++ `what()` line, in log order."""
    out = _Scan(lines=lines)
    file_task: int | None = None
    file_node: str | None = None
    file_rank: int | None = None
    in_tb: set[tuple[int | None, int | None]] = set()
    summary_left = 0
    for seq, raw in enumerate(lines):
        line = raw[:MAX_LINE]
        head = _HEADER.match(line)
        if head:
            file_task = int(head.group(1)) if head.group(1) else None
            file_rank = int(head.group(2)) if head.group(2) else None
            file_node = head.group(3)
            in_tb.clear()
            continue
        o, body = origin_of(line, file_task, file_node, file_rank)
        if o.task is not None:
            out.tasks.add(o.task)
        summary_left = _summary(out, body, o, summary_left)
        hit = next((p for p in patterns if p.regex.search(body)), None)
        if hit is not None:
            out.hits.append(Hit(hit.tier, seq, line, o, hit))
            continue
        _exception(out, seq, line, body.strip(), o, in_tb)
    return out


def _summary(out: _Scan, body: str, o: Origin, left: int) -> int:
    """torchrun's error summary: the rank and host under "Root Cause"."""
    if "Root Cause (first observed failure)" in body:
        out.summary = Origin()
        return 8
    if left and out.summary is not None:
        r = _TORCHRUN_RANK.match(body)
        if r:
            out.summary.rank = int(r.group(1))
        elif body.lstrip().startswith("host") and o.host:
            out.summary.host = o.host
        return left - 1
    return 0


def _exception(
    out: _Scan, seq: int, line: str, text: str, o: Origin, in_tb: set[tuple[int | None, int | None]]
) -> None:
    key = (o.rank, o.task)
    if text.startswith(_TB_START):
        in_tb.add(key)
        return
    what = _WHAT.match(text)
    if what and not _FOLLOWERS.search(text):
        out.exceptions.append(Hit(SYMPTOM, seq, line, o, label="C++ exception"))
        return
    exc = _EXC.match(text) if key in in_tb else None
    if exc:
        in_tb.discard(key)
        if not _FOLLOWERS.search(text):
            out.exceptions.append(Hit(SYMPTOM, seq, line, o, label=exc.group(1)[:200]))


def earliest(hits: Sequence[Hit]) -> Hit:
    """The first of `hits` in time: by timestamp when all have one, else in log order."""
    if all(h.origin.stamp for h in hits):
        return min(hits, key=lambda h: (h.origin.stamp or "", h.seq))
    return min(hits, key=lambda h: h.seq)


def choose(
    lines: Sequence[str],
    patterns: Sequence[Pattern],
    nodes: Sequence[str] = (),
    state_sig: Signature | None = None,
) -> Signature | None:
    """The root cause over `lines` (see the module's doc), else `state_sig`."""
    found = scan(lines, patterns)
    best: Hit | None = None
    if found.hits:
        tier = min(h.tier for h in found.hits)
        best = earliest([h for h in found.hits if h.tier == tier])
        if best.tier >= SYMPTOM and state_sig is not None:
            return state_sig
        if best.tier >= SYMPTOM and found.exceptions:
            best = earliest(found.exceptions)
    elif found.exceptions:
        best = earliest(found.exceptions)
    if best is None:
        return state_sig
    if best.pattern is not None and best.pattern.name in _STUCK:
        best = _hung(lines, found, best)
    return _signature(best, found, nodes)


def _hung(lines: Sequence[str], found: _Scan, best: Hit) -> Hit:
    """Which rank really hung: when every rank's shim ended it for making no step, the rank
    whose stacks are inside a collective (torch.distributed, autograd, DDP) was only waiting
    for the one whose stacks are not. That one's line, named a hang."""
    stuck = [h for h in found.hits if h.pattern is not None and h.pattern.name in _STUCK]
    keyed = [h for h in stuck if h.origin.rank is not None or h.origin.task is not None]
    keys = {(h.origin.rank, h.origin.task) for h in keyed}
    waiting = {(h.origin.rank, h.origin.task) for h in keyed if _waiting(lines, h)}
    if len(keys) < 2 or not waiting or waiting == keys:
        return best
    hung = [h for h in keyed if (h.origin.rank, h.origin.task) not in waiting]
    first = earliest(hung)
    named = [h.pattern for h in stuck if h.pattern is not None and h.pattern.name == "hang"]
    pattern = named[0] if named else first.pattern  # named a hang, whoever's shim fired
    return Hit(ROOT, first.seq, first.line, first.origin, pattern)


def _waiting(lines: Sequence[str], hit: Hit) -> bool:
    """The stacks dumped after `hit` by the same rank show a collective (in the same file:
    a rank its file's header names owns that file's lines)."""
    key = (hit.origin.rank, hit.origin.task)
    own, _ = origin_of(hit.line[:MAX_LINE], hit.origin.task, None)
    file_rank = hit.origin.rank if own.rank is None else None
    for raw in lines[hit.seq + 1 : hit.seq + 1 + _STACK_LINES]:
        if _HEADER.match(raw[:MAX_LINE]):
            break
        o, body = origin_of(raw[:MAX_LINE], hit.origin.task, None, file_rank)
        if (o.rank, o.task) == key and _WAITING.search(body):
            return True
    return False


def _signature(best: Hit, found: _Scan, nodes: Sequence[str]) -> Signature:
    o = best.origin
    rank = o.rank if o.rank is not None else o.task
    node = _node(best, found, nodes)
    if rank is None and node is None and found.summary is not None:
        rank, node = found.summary.rank, _known(found.summary.host, nodes)
    text = clip(best.line)
    if best.pattern is None:
        return Signature("python-exception", best.label, text, rank, node)
    p = best.pattern
    sig = Signature(p.name, p.label, text, rank, node, p.action_for(best.line))
    path = _checkpoint_path(found.lines, best) if p.name == "corrupt-checkpoint" else None
    return sig.reading(path) if path else sig


def _checkpoint_path(lines: Sequence[str], best: Hit) -> str | None:
    """The checkpoint a failed load read: the last path in the line or the lines before it."""
    for raw in reversed(lines[max(0, best.seq - _CKPT_BACK) : best.seq + 1]):
        paths = [m.group(0) for m in _PATH.finditer(raw[:MAX_LINE]) if _CKPT.search(m.group(0))]
        if paths:
            return paths[-1][:300]
    return None


def _node(best: Hit, found: _Scan, nodes: Sequence[str]) -> str | None:
    """The node that printed the line (or that a node-level line names)."""
    p = best.pattern
    if p is not None and p.node_level and "what" in p.regex.groupindex:
        m = p.regex.search(best.line)
        named = _known(m.group("what") if m else None, nodes)
        if named:
            return named
    host = _known(best.origin.host, nodes)
    if host:
        return host
    task = best.origin.task
    one_per_node = found.tasks and max(found.tasks) < len(nodes)
    if task is not None and one_per_node and task < len(nodes):
        return nodes[task]
    return nodes[0] if len(nodes) == 1 else None


def _known(host: str | None, nodes: Sequence[str]) -> str | None:
    """`host` as one of the attempt's nodes (a fully qualified name matches its short one)."""
    if not host:
        return None
    short = host.split(".")[0]
    return next((n for n in nodes if n in (host, short) or n.split(".")[0] == short), None)


def clip(line: str, limit: int = 300) -> str:
    return alert.clip(line.strip(), limit)
