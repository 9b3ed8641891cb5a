"""What a failure signature declares: one module in this package, one line in `LINES`.

A signature names why an attempt died from one line of its log (docs/runs.md): its regex is
anchored to the line the failing component really prints (the kernel's `NVRM: Xid (PCI:…): N`,
not any line with "xid" in it); `node_level`: the printing node becomes suspect
(rtool/nodes/node_fault.py); `action`: what the user needs (`{what}`: the pattern's `what`
group, else `what_default`); `examples` and `near_misses`: the real lines it must match and the
ordinary ones it must not, run by a generic test with the shared corpus (tests/runs/corpus/).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace

#: Tiers (the root cause over an attempt is the lowest tier, then the earliest line): a root
#: cause (a GPU fault, a full disk), a failure often the first sign of another (an NCCL network
#: error, a segfault), a symptom printed after the real cause (by waiting ranks, or Slurm).
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

    def reading(self, path: str) -> Signature:
        """A corrupt checkpoint's, naming the checkpoint the failed load read in its action."""
        read = f"the checkpoint it read ({path})"
        action = self.action.replace("the checkpoint it resumed from", read)
        return replace(self, checkpoint=path, action=action)


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
