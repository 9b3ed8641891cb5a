"""Why an attempt died: failure signatures matched on a bounded tail of its logs (docs/runs.md).

A default signature is one module of this package declaring it (`base.Declared`) and one line
in `LINES`. The config's `[[runs.signature]]` entries are tried first (tier 0, so a site can
refine a default); every pattern follows the linear-time rule (rtool/core/linear.py) and sees
lines of at most `MAX_LINE` characters. `rootcause` chooses the root cause over an attempt's
lines. Slurm's final states are signatures too, used when the log says no more than a symptom.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from rtool.core.registry import Registry
from rtool.runs.signatures import rootcause
from rtool.runs.signatures.base import MAX_LINE, Declared, Pattern, Signature

#: The default signatures; on one line the first that matches wins, so the more specific come
#: first. One line each: its name -> the `Declared` its module of this package declares.
LINES: dict[str, str] = {
    "cuda-oom": "rtool.runs.signatures.cuda_oom:SIGNATURE",
    "ecc": "rtool.runs.signatures.ecc:SIGNATURE",
    "xid": "rtool.runs.signatures.xid:SIGNATURE",
    "xid-app": "rtool.runs.signatures.xid_app:SIGNATURE",
    "gpu-lost": "rtool.runs.signatures.gpu_lost:SIGNATURE",
    "node-failure": "rtool.runs.signatures.node_failure:SIGNATURE",
    "cuda-fault": "rtool.runs.signatures.cuda_fault:SIGNATURE",
    "disk-full": "rtool.runs.signatures.disk_full:SIGNATURE",
    "disk-quota": "rtool.runs.signatures.disk_quota:SIGNATURE",
    "corrupt-checkpoint": "rtool.runs.signatures.corrupt_checkpoint:SIGNATURE",
    "address-in-use": "rtool.runs.signatures.address_in_use:SIGNATURE",
    "rendezvous": "rtool.runs.signatures.rendezvous:SIGNATURE",
    "hang": "rtool.runs.signatures.hang:SIGNATURE",
    "oom-killer": "rtool.runs.signatures.oom_killer:SIGNATURE",
    "nccl-error": "rtool.runs.signatures.nccl_error:SIGNATURE",
    "nccl-timeout": "rtool.runs.signatures.nccl_timeout:SIGNATURE",
    "segfault": "rtool.runs.signatures.segfault:SIGNATURE",
    "bus-error": "rtool.runs.signatures.bus_error:SIGNATURE",
    "slurm-time-limit": "rtool.runs.signatures.slurm_time_limit:SIGNATURE",
    "slurm-preempted": "rtool.runs.signatures.slurm_preempted:SIGNATURE",
    "slurm-node-failure": "rtool.runs.signatures.slurm_node_failure:SIGNATURE",
    "slurm-cancelled": "rtool.runs.signatures.slurm_cancelled:SIGNATURE",
    "peer-failed": "rtool.runs.signatures.peer_failed:SIGNATURE",
}

SIGNATURES: Registry[Declared] = Registry("failure signature", LINES)


def declared(registry: Mapping[str, Declared] = SIGNATURES) -> tuple[Declared, ...]:
    """The registered declarations, in `LINES` order."""
    return tuple(registry.values())


DEFAULTS: tuple[Pattern, ...] = tuple(d.compiled() for d in declared())
#: Names of the signatures that point at the printing node's hardware, not at the training.
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


def compile_extra(entries: Iterable[tuple[str, str, str]]) -> tuple[Pattern, ...]:
    """Config signatures (name, label, regex), case-insensitive; raises re.error on a bad
    regex (the config checks the linear-time rule before)."""
    return tuple(Pattern(name, label, re.compile(rx, re.IGNORECASE)) for name, label, rx in entries)


def match(
    lines: Sequence[str],
    state: str | None = None,
    error: str | None = None,
    extra: Sequence[Pattern] = (),
    nodes: Sequence[str] = (),
) -> Signature | None:
    """The signature of an attempt: its root cause over `lines` (config patterns first, the
    shim's recorded error counts as a last log line), else Slurm's state, else the earliest
    Python exception, else the shim's error. `nodes`: the attempt's, to name the node."""
    candidates = [*lines, *([error] if error else [])]
    state_sig = None
    if state in STATE_SIGNATURES:
        state_sig = Signature(state.lower().replace("_", "-"), STATE_SIGNATURES[state])
    found = rootcause.choose(candidates, (*extra, *DEFAULTS), nodes, state_sig)
    if found is None and error:
        label = error.split(":", 1)[0][:200]
        return Signature("python-exception", label, rootcause.clip(error))
    return found


__all__ = [
    "DEFAULTS",
    "LINES",
    "MAX_LINE",
    "NODE_LEVEL",
    "SIGNATURES",
    "STATE_SIGNATURES",
    "Declared",
    "Pattern",
    "compile_extra",
    "declared",
    "match",
]
