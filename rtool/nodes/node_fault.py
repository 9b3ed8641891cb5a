"""Which log signatures of an attempt are the node's fault, and which node they blame.

The run ledger (`rtool/runs/`) finds an attempt's root cause (`xid`, `ecc`, `gpu-lost` ...) and,
when the log says, the node that printed it. Whether a signature points at the hardware of the
node that printed the line is its own declaration (`node_level` in its module under
rtool/runs/signatures/): an NCCL timeout is printed by the ranks left waiting, never by the
broken node, so it is not node-level. A node-level one blames the node the line names (srun's
`Node failure on n7`, a host name in the line), else the node that printed it (the root cause's
`node`), else the attempt's node when it ran on one node; otherwise nobody (a multi-node XID line
without a host could be any node).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rtool.runs.signatures import NODE_LEVEL

__all__ = ["NODE_LEVEL", "blamed"]


def blamed(nodes: Sequence[str], signature: str, line: str, node: str | None = None) -> list[str]:
    """Pure: the nodes a signature found in an attempt on `nodes` blames (`node`: the node
    that printed the line, when known)."""
    if signature not in NODE_LEVEL or not nodes:
        return []
    named = [n for n in nodes if re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-])", line)]
    if named:
        return named
    if node is not None and node in nodes:
        return [node]
    return list(nodes) if len(nodes) == 1 else []
