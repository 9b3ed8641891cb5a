"""What a failure signature declares: one module in this package, one line in `LINES`.

A signature names why an attempt died from one line of its log: its `name` (`xid`), a `label`
for people, a regex anchored to the line the failing component really prints (the kernel's
`NVRM: Xid (PCI:…): N`, not any line with "xid" in it), whether it points at the node's
hardware (`node_level`: the node becomes suspect, see rtool/nodes/signatures.py), and the real
lines it must match (`examples`) and ordinary lines it must not (`near_misses`: code, comments,
exceptions, user prints). A generic test runs every registered signature against its own lines
and a shared corpus (tests/runs/corpus/), and holds its pattern to the linear-time rule
(rtool/core/linear.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Pattern:
    """A compiled signature: a default's (see `Declared`) or a `[[runs.signature]]` entry's."""

    name: str
    label: str
    regex: re.Pattern[str]
    node_level: bool = False


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

    def compiled(self) -> Pattern:
        flags = re.IGNORECASE if self.ignore_case else 0
        return Pattern(self.name, self.label, re.compile(self.pattern, flags), self.node_level)
