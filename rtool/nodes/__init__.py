"""Bad nodes: the suspect-node store, keeping a run off suspects, and the pre-flight check.

Floor 2: it stands on the core and `runs`; the watchdogs and the app use it (docs/architecture.md).
"""
