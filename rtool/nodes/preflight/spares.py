"""Spare nodes (`rtool submit --spare-nodes K`, docs/runs.md "Spare nodes"): which nodes the
next launch of the training runs on after a node of the job failed.

The job holds N + K nodes (`--no-kill`: Slurm keeps the job on the others when one fails) and
the batch script launches the training on N of them (RTOOL_LAUNCH_NODES; RTOOL_LAUNCH_SIZE is
N, RTOOL_SPARE_NODES is K). Before it restarts a launch in place, `rtool preflight
--restart-after` finds the nodes that are bad (down, drained, blamed by the log); when N good
nodes of the allocation are left, the next launch keeps the good nodes it had and takes spares
for the others, and the check prints them as one `RTOOL-LAUNCH-NODES a,b` line for the batch
script. Pure: no command is run here.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

#: The line of the restart check's output that names the next launch's nodes.
MARK = "RTOOL-LAUNCH-NODES"
_NODE = re.compile(r"[A-Za-z0-9_.-]{1,100}")


@dataclass(frozen=True)
class Spares:
    """The spare-node set-up of this job, from the batch script's variables."""

    size: int  # N: the nodes one launch runs on
    spare: int  # K: the nodes held beyond them
    launch: tuple[str, ...]  # the nodes the launch that ended ran on

    @staticmethod
    def from_env(env: Mapping[str, str]) -> Spares | None:
        """None unless the job was submitted with spare nodes."""
        size, spare = env.get("RTOOL_LAUNCH_SIZE", ""), env.get("RTOOL_SPARE_NODES", "")
        if not (size.isdigit() and spare.isdigit()) or int(size) < 1 or int(spare) < 1:
            return None
        nodes = [n for n in env.get("RTOOL_LAUNCH_NODES", "").split(",") if _NODE.fullmatch(n)]
        return Spares(int(size), int(spare), tuple(nodes))

    def pick(self, allocation: Sequence[str], bad: Collection[str]) -> list[str] | None:
        """N good nodes of the allocation (those of the last launch first, then spares), in
        the allocation's order; None when fewer than N are left."""
        good = [n for n in allocation if n not in bad]
        kept = [n for n in self.launch if n in good]
        chosen = set(kept + [n for n in good if n not in kept][: max(0, self.size - len(kept))])
        out = [n for n in good if n in chosen][: self.size]
        return out if len(out) == self.size else None


def launch_line(nodes: Sequence[str]) -> str:
    """The line the batch script reads (`RTOOL-LAUNCH-NODES n1,n2`)."""
    return f"{MARK} {','.join(nodes)}"
