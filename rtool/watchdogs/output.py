"""What a sweep writes besides its checks' results: how it reports them (`Output`: status lines
or JSON, tee, Prometheus textfile, notify, dry run) and the state file of the causes it raised
(rtool/watchdogs/causes.py), which the next sweep reads back. A leaf: the runner, the causes
and the dry run import it, and it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: The causes raised by earlier sweeps (rtool/watchdogs/causes.py STATE_FILE).
CAUSES_FILE = "watch/causes.json"


@dataclass
class Output:
    json: bool = False
    notify: bool = True
    tee: Path | None = None
    #: node_exporter textfile-collector folder (rtool/watchdogs/prometheus.py), or None
    prom_textfile: Path | None = None
    #: look only: say what would be done and sent, do none of it (rtool/watchdogs/dryrun.py)
    dry_run: bool = False
