"""Which log signatures of an attempt are the node's fault, and which node they blame.

The run ledger (`rtool/runs/`) finds an attempt's signature (`xid`, `ecc`, `nccl-timeout` ...).
Whether one points at the hardware is its own declaration (`node_level` in its module under
rtool/runs/signatures/). A node-level one blames the attempt's node when the attempt ran on one
node, or the nodes the matched line names (an NCCL timeout naming the peer host); otherwise
nobody (a multi-node XID line without a host name could be any node).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rtool.runs.signatures import NODE_LEVEL

__all__ = ["NODE_LEVEL", "blamed"]


def blamed(nodes: Sequence[str], signature: str, line: str) -> list[str]:
    """Pure: the nodes a signature found in an attempt on `nodes` blames."""
    if signature not in NODE_LEVEL or not nodes:
        return []
    named = [n for n in nodes if re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-])", line)]
    if named:
        return named
    return list(nodes) if len(nodes) == 1 else []
