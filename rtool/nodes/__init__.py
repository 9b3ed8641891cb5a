"""Bad nodes: the suspect-node store, keeping a run off suspects, and the pre-flight check."""
