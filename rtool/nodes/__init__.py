"""Bad nodes: the suspect-node store, keeping a run off suspects, and the pre-flight check.

Layer: above notify and slurm_templates, below cron and watchdogs (see docs/nodes.md).
"""
