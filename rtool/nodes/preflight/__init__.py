"""The pre-flight check: on every allocated node, before training (docs/nodes.md).

`node` runs the registered checks of one node; `job` runs them on every node of the job
through srun and keeps the attempt off the nodes that fail.
"""
