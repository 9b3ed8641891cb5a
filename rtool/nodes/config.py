"""[nodes] config section (owned by the nodes package).

```toml
[nodes]
expiry = "24h"              # a suspect is forgotten this long after its last evidence
exclude = true              # add suspects to a run's excluded nodes (submit, pending tasks)
max_excluded = "25%"        # never exclude more of the partition's nodes than this ...
min_left = 1                # ... and always leave at least this many (plus what the job needs)

[nodes.preflight]
enabled = true              # in every rendered training script that has something to check
gpus = 8                    # GPUs each node must show (default: --gpus-per-node)
dirs = ["/scratch/me/run", "/scratch/me/ckpt"]   # writable, with min_free free
min_free = "10GiB"
command = "ibstat | grep -q Active"              # any check of yours (bash -c), exit 0 = healthy
timeout = "60s"             # the whole pre-flight, all nodes
check_timeout = "20s"       # each command on a node (a hung nvidia-smi)
max_requeues = 3            # requeue away from a bad node at most this many times per job
```
"""

from __future__ import annotations

from rtool.core.config.types import Duration, Percent, Section, Size


class PreflightConfig(Section):
    enabled: bool = True
    #: GPUs each node must show (default: --gpus-per-node; set it where whole nodes are
    #: allocated without a GPU request).
    gpus: int | None = None
    dirs: list[str] = []
    min_free: Size = 1024**3
    command: str | None = None
    timeout: Duration = 60.0
    check_timeout: Duration = 20.0
    max_requeues: int = 3


class NodesConfig(Section):
    expiry: Duration = 24 * 3600.0
    exclude: bool = True
    max_excluded: Percent = 25.0
    min_left: int = 1
    preflight: PreflightConfig = PreflightConfig()
