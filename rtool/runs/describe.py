"""How an attempt reads in an alert: one short phrase, and bounded fields readable in Slack."""

from __future__ import annotations

from rtool.core.slurm.hostlist import compress_hostlist
from rtool.runs.model import Attempt

#: Lines and characters of a log tail in an alert field (Slack caps a field at 2000).
ALERT_TAIL_LINES = 8
ALERT_TAIL_CHARS = 1500


def exit_text(a: Attempt) -> str:
    if a.signal:
        return f"signal {a.signal}"
    return f"exit {a.exit_code}" if a.exit_code is not None else "exit ?"


def phrase(a: Attempt) -> str:
    """`attempt 4 (job 88_4 on n2, FAILED exit 1, CUDA out of memory)`."""
    where = f" on {','.join(a.nodes)}" if a.nodes else ""
    bits = [f"job {a.job_id}{where}", f"{a.state} {exit_text(a)}" if a.is_over else a.state]
    if a.signature is not None:
        bits.append(a.signature.label + where_text(a))
    elif a.error:
        bits.append(a.error[:120])
    if a.stacks:
        bits.append(f"hung: {a.stacks[:300]}")
    return f"attempt {a.number} ({', '.join(bits)})"


def where_text(a: Attempt) -> str:
    """` on rank 3 (n2)`: who printed the root cause, when the log says (the node only when
    the attempt ran on more than one)."""
    sig = a.signature
    node = sig.node if sig is not None and len(a.nodes) > 1 else None
    if sig is None or (sig.rank is None and node is None):
        return ""
    rank = f"rank {sig.rank}" if sig.rank is not None else ""
    if node is None:
        return f" on {rank}"
    return f" on {rank} ({node})" if rank else f" on {node}"


def tail_block(lines: tuple[str, ...]) -> str:
    """The last lines as a fenced block, cut to fit a Slack field."""
    keep = list(lines[-ALERT_TAIL_LINES:])
    while keep and sum(len(x) + 1 for x in keep) > ALERT_TAIL_CHARS:
        keep.pop(0)
    text = "\n".join(x.replace("```", "'''") for x in keep)
    return f"```\n{text}\n```" if text else ""


def fields(a: Attempt) -> dict[str, str]:
    """attempt, job, nodes, state, exit code, signature, stop reason, stacks, log tail."""
    out = {
        "attempt": str(a.number),
        "job_id": a.job_id + (f" (restart {a.restart})" if a.restart else ""),
        "nodes": compress_hostlist(a.nodes) or "?",
        "state": a.state,
        "exit_code": exit_text(a) if a.is_over else "-",
        "signature": a.signature.label + where_text(a) if a.signature else (a.error or "none"),
    }
    if a.signature is not None and a.signature.action:
        out["action"] = a.signature.action
    if a.stop_reason:
        out["stop_reason"] = a.stop_reason
    if a.stacks:
        out["stacks"] = a.stacks
    if a.log_tail:
        out["log_tail"] = tail_block(a.log_tail)
    return out
