"""The pre-flight checks of one node (docs/nodes.md): `node` runs the registered checks.

Running them on every node of a job through srun, and keeping the attempt off the nodes that
fail, is `rtool.nodes.preflight_job`; the decisions before an in-place restart are
`rtool.nodes.restart`. Nothing here imports the rest of `rtool.nodes`.
"""
