"""Why an attempt died: failure signatures matched on a bounded tail of its log.

A default signature is one module of this package declaring it (`base.Declared`: name, label,
anchored pattern, node-level or not, its real lines and near misses) and one line in `LINES`.
The config's `[[runs.signature]]` entries are tried first (so a site can refine a default);
their patterns follow the linear-time rule too (rtool/core/linear.py) and, like every pattern
here, only ever see lines of at most `MAX_LINE` characters. Slurm's own final states
(NODE_FAIL, OUT_OF_MEMORY, TIMEOUT, PREEMPTED) are signatures too, used when the log says
nothing more specific.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Sequence

from rtool.runs.model import Signature
from rtool.runs.signatures.base import Declared, Pattern

#: The default signatures, most specific first (the first that matches any tail line wins):
#: one line each, the module of this package that declares it (or a dotted module path).
LINES = (
    "cuda_oom",
    "nccl_timeout",
    "nccl_error",
    "xid",
    "ecc",
    "segfault",
    "oom_killer",
)
#: Every pattern sees at most this many characters of a line.
MAX_LINE = 1000


def declared(lines: Sequence[str] = LINES) -> tuple[Declared, ...]:
    """The registered declarations, in `LINES` order."""
    out = []
    for line in lines:
        module = line if "." in line else f"{__name__}.{line}"
        decl = importlib.import_module(module).SIGNATURE
        assert isinstance(decl, Declared), line
        out.append(decl)
    return tuple(out)


DEFAULTS: tuple[Pattern, ...] = tuple(d.compiled() for d in declared())
#: Names of the signatures that point at the node's hardware, not at the training.
NODE_LEVEL = frozenset(p.name for p in DEFAULTS if p.node_level)

#: Slurm final states that are a reason in themselves.
STATE_SIGNATURES: dict[str, str] = {
    "NODE_FAIL": "node failure",
    "OUT_OF_MEMORY": "out of memory (Slurm)",
    "TIMEOUT": "time limit",
    "PREEMPTED": "preempted",
    "BOOT_FAIL": "node boot failure",
    "DEADLINE": "deadline reached",
}

_TRACEBACK_LAST = re.compile(r"^([A-Za-z_][\w.]{0,200}(Error|Exception|Interrupt|Exit)\b.*)$")


def compile_extra(entries: Iterable[tuple[str, str, str]]) -> tuple[Pattern, ...]:
    """Config signatures (name, label, regex), case-insensitive; raises re.error on a bad
    regex (the config checks the linear-time rule before)."""
    return tuple(Pattern(name, label, re.compile(rx, re.IGNORECASE)) for name, label, rx in entries)


def last_traceback_line(lines: Sequence[str]) -> str | None:
    """The exception line that ends Python's last traceback in `lines`, if any."""
    seen_tb = False
    found: str | None = None
    for line in lines:
        text = line.strip()[:MAX_LINE]
        if text.startswith("Traceback (most recent call last)"):
            seen_tb, found = True, None
        elif seen_tb and found is None and _TRACEBACK_LAST.match(text):
            found = text
    return found


def match(
    lines: Sequence[str],
    state: str | None = None,
    error: str | None = None,
    extra: Sequence[Pattern] = (),
) -> Signature | None:
    """The signature of an attempt: a log pattern (config first, then defaults; the shim's
    recorded error counts as a log line), else Slurm's state, else Python's last traceback
    line, else the shim's error."""
    candidates = [line[:MAX_LINE] for line in (*lines, *([error] if error else []))]
    for pattern in (*extra, *DEFAULTS):
        for line in reversed(candidates):
            if pattern.regex.search(line):
                return Signature(pattern.name, pattern.label, _clip(line))
    if state in STATE_SIGNATURES:
        return Signature(state.lower().replace("_", "-"), STATE_SIGNATURES[state])
    last = last_traceback_line(lines)
    if last:
        return Signature("python-exception", last.split(":", 1)[0][:200], _clip(last))
    if error:
        return Signature("python-exception", error.split(":", 1)[0][:200], _clip(error))
    return None


def _clip(line: str, limit: int = 300) -> str:
    line = line.strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


__all__ = [
    "DEFAULTS",
    "LINES",
    "NODE_LEVEL",
    "STATE_SIGNATURES",
    "Declared",
    "Pattern",
    "compile_extra",
    "declared",
    "last_traceback_line",
    "match",
]
