"""node-failure: srun says a node of the step failed, and names it."""

from rtool.runs.signatures.base import ROOT, Declared

SIGNATURE = Declared(
    name="node-failure",
    label="node failure (srun)",
    pattern=r"\bsrun: error: Node failure on (?P<what>[\w.-]{1,100})",
    node_level=True,
    tier=ROOT,
    action="Slurm lost node {what}: it is suspect (rtool nodes)",
    what_default="a node",
    why="it names the failed node (blamed by name, not the printing node)",
    examples=("srun: error: Node failure on hpcsmall-debug-ghpc-0",),
    near_misses=(
        "# srun: error: Node failure on <node> means the node died",
        "srun: error: Nodes hpcsmall-debug-ghpc-[0-2] are still not ready",
    ),
)
