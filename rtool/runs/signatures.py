"""Why an attempt died: failure signatures matched on a bounded tail of its log.

A signature is one row of `DEFAULTS` (name, label, regex) or of the config's
`[[runs.signature]]` entries (tried first, so a site can refine a default). Slurm's own final
states (NODE_FAIL, OUT_OF_MEMORY, TIMEOUT, PREEMPTED) are signatures too, used when the log
says nothing more specific. Adding a default = one row here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rtool.runs.model import Signature


@dataclass(frozen=True)
class Pattern:
    name: str
    label: str
    regex: re.Pattern[str]


def _p(name: str, label: str, regex: str) -> Pattern:
    return Pattern(name, label, re.compile(regex, re.IGNORECASE))


#: Log signatures, most specific first (the first that matches any tail line wins).
DEFAULTS: tuple[Pattern, ...] = (
    _p(
        "cuda-oom",
        "CUDA out of memory",
        r"CUDA out of memory|CUDA error: out of memory"
        r"|torch\.cuda\.OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED",
    ),
    _p(
        "nccl-timeout",
        "NCCL timeout (collective watchdog)",
        r"Watchdog caught collective operation timeout|NCCL.*timed? ?out"
        r"|collective operation timeout|ProcessGroupNCCL.*Timeout",
    ),
    _p(
        "nccl-error",
        "NCCL error",
        r"NCCL (WARN|error)|ncclInternalError|ncclSystemError"
        r"|ncclUnhandledCudaError|ncclRemoteError|NCCL communicator was aborted",
    ),
    _p("xid", "GPU XID error", r"\bXid\b|NVRM: Xid"),
    _p("ecc", "GPU ECC error", r"uncorrectable ECC|ECC error|CUDA error: uncorrectable"),
    _p("segfault", "segmentation fault", r"Segmentation fault|SIGSEGV|segfault"),
    _p(
        "oom-killer",
        "killed by the OOM killer",
        r"oom[-_ ]kill|Out of memory: Killed process|out-of-memory handler"
        r"|Detected \d+ oom[-_ ]kill event",
    ),
)

#: Slurm final states that are a reason in themselves.
STATE_SIGNATURES: dict[str, str] = {
    "NODE_FAIL": "node failure",
    "OUT_OF_MEMORY": "out of memory (Slurm)",
    "TIMEOUT": "time limit",
    "PREEMPTED": "preempted",
    "BOOT_FAIL": "node boot failure",
    "DEADLINE": "deadline reached",
}

_TRACEBACK_LAST = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*)$")


def compile_extra(entries: Iterable[tuple[str, str, str]]) -> tuple[Pattern, ...]:
    """Config signatures (name, label, regex); raises re.error on a bad regex."""
    return tuple(_p(name, label, regex) for name, label, regex in entries)


def last_traceback_line(lines: Sequence[str]) -> str | None:
    """The exception line that ends Python's last traceback in `lines`, if any."""
    seen_tb = False
    found: str | None = None
    for line in lines:
        text = line.strip()
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
    candidates = [*lines, *([error] if error else [])]
    for pattern in (*extra, *DEFAULTS):
        for line in reversed(candidates):
            if pattern.regex.search(line):
                return Signature(pattern.name, pattern.label, _clip(line))
    if state in STATE_SIGNATURES:
        return Signature(state.lower().replace("_", "-"), STATE_SIGNATURES[state])
    last = last_traceback_line(lines)
    if last:
        return Signature("python-exception", last.split(":", 1)[0], _clip(last))
    if error:
        return Signature("python-exception", error.split(":", 1)[0], _clip(error))
    return None


def _clip(line: str, limit: int = 300) -> str:
    line = line.strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"
