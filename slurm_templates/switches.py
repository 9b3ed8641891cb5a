"""Touching the kill and save switches, and remembering submissions (filesystem side effects)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path
from typing import Any

#: Switch files and the folders created for them are group-writable so colleagues can stop a run.
DIR_MODE = 0o2775
FILE_MODE = 0o664


def touch_switch(path: str | Path) -> Path:
    """Create the switch file (and its missing parent folders, group-writable)."""
    p = Path(path).expanduser()
    missing = [d for d in [p.parent, *p.parent.parents] if not d.exists()]
    for d in reversed(missing):
        d.mkdir(exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(d, DIR_MODE)
    created = not p.exists()
    p.touch()
    if created:
        with contextlib.suppress(OSError):
            os.chmod(p, FILE_MODE)
    return p


def record_name(job_name: str) -> str:
    """State-dir file name of a job name's submission record (any job name is safe)."""
    return "submit/" + hashlib.sha256(job_name.encode()).hexdigest()[:20] + ".json"


def submission_record(job_id: str, job: Any, cwd: Path) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "job_name": job.job_name,
        "array": job.array,
        "kill_switch": job.kill_switch,
        "save_switch": job.save_switch,
        "workdir": str(cwd),
        "submitted": time.time(),
    }
