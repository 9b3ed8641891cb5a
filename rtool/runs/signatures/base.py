"""What a failure signature declares: one module in this package, one line in `LINES`.

A signature names why an attempt died from one line of its log: its `name` (`xid`), a `label`
for people, a regex anchored to the line the failing component really prints (the kernel's
`NVRM: Xid (PCI:…): N`, not any line with "xid" in it), whether it points at the hardware of
the node that printed the line (`node_level`: the node becomes suspect, see
rtool/nodes/node_fault.py), how specific it is (`tier`: 1 a root cause such as a GPU fault or a
full disk, 2 a failure that is often the first sign of another (an NCCL network error, a
segfault), 3 a symptom that other ranks or Slurm print after the real cause (a collective
timeout on the waiting ranks, Slurm's cancel lines)), the `action` a user needs (a format
string; `{what}` is the pattern's `what` group when it matched, else `what_default`), and the
real lines it must match (`examples`) and ordinary lines it must not (`near_misses`: code,
comments, exceptions, user prints). A generic test runs every registered signature against its
own lines and the shared corpus (tests/runs/corpus/), and holds its pattern to the linear-time
rule (rtool/core/linear.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

#: Tiers: how specific a signature is (the root cause over an attempt is the lowest tier,
#: then the earliest line).
ROOT, SECONDARY, SYMPTOM = 1, 2, 3
#: Every pattern sees at most this many characters of a line.
MAX_LINE = 4000


@dataclass(frozen=True)
class Signature:
    """Why an attempt died: a known failure (`cuda-oom`) with its line in the log."""

    name: str  # cuda-oom, nccl-timeout, node-fail ...
    label: str  # "CUDA out of memory"
    line: str = ""  # the log line that matched ("" for Slurm states)
    rank: int | None = None  # the rank (or srun task) that printed it, when the log says
    node: str | None = None  # the node that printed it (or that it names), when known
    action: str = ""  # what the user needs to do ("free space on /scratch ...")
    checkpoint: str | None = None  # corrupt-checkpoint: the checkpoint the failed load read
    last_complete: str | None = None  # ... and the last complete one ("": none; None: unknown)


@dataclass(frozen=True)
class Pattern:
    """A compiled signature: a default's (see `Declared`) or a `[[runs.signature]]` entry's
    (tier 0: a site's own signature beats every default)."""

    name: str
    label: str
    regex: re.Pattern[str]
    node_level: bool = False
    tier: int = 0
    action: str = ""
    what_default: str = ""

    def action_for(self, line: str) -> str:
        """The action with `{what}` filled from `line` (the `what` group, else the default)."""
        if not self.action:
            return ""
        m = self.regex.search(line)
        what = m.groupdict().get("what") if m else None
        return self.action.replace("{what}", (what or self.what_default).strip()[:200])


@dataclass(frozen=True)
class Declared:
    """A failure signature as its module declares it."""

    name: str
    label: str
    pattern: str
    node_level: bool = False
    examples: tuple[str, ...] = ()
    near_misses: tuple[str, ...] = ()
    ignore_case: bool = False
    tier: int = ROOT
    action: str = ""
    what_default: str = ""
    why: str = ""  # why it is (or is not) node-level, for docs/runs.md

    def compiled(self) -> Pattern:
        regex = re.compile(self.pattern, re.IGNORECASE if self.ignore_case else 0)
        same = {f.name: getattr(self, f.name) for f in fields(Pattern) if f.name != "regex"}
        return Pattern(regex=regex, **same)
