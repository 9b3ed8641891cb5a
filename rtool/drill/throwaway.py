"""The short throw-away job of `rtool drill --submit`: the submission as `rtool submit` would
make it, moved out of the real run's way.

Kept as the real one has them: the script, its interpreter, launcher and arguments, the
`--signal`, the time limit, the requeue mode (array throttle, `--auto-requeue`), the nodes and
GPUs, the pre-flight. Changed: its own job name (`NAME-drill`) and run, its own heartbeat,
switches and output in the drill's folder, which is also its working directory (relative paths
in the arguments land there), no dependency, an array cut to its first two tasks (the second is
the next attempt), at least one requeue. An absolute path in the script's arguments is shared
with the real run: the drill says so before it submits.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
import time
from pathlib import Path

from rtool.core.errors import RtoolError
from rtool.slurm_templates.batchfile import override
from rtool.slurm_templates.training import TrainingJob

#: `#SBATCH` options of a user's own script that the throw-away job sets itself.
OWN = {"job-name", "output", "error", "chdir", "array", "dependency"}
_FIRST = re.compile(r"^(\d+)(?:-(\d+))?(?::(\d+))?")


def first_tasks(array: str) -> str:
    """The first two tasks of an array spec, one at a time: `1-10%1` -> `1-2%1`, `0,5,9` ->
    `0-1%1` (a single task gives that task and the next)."""
    m = _FIRST.match(array)
    first = int(m.group(1)) if m else 0
    step = int(m.group(3)) if m and m.group(3) else 1
    return f"{first}-{first + step}:{step}%1" if step > 1 else f"{first}-{first + 1}%1"


def drill_folder(base: Path, name: str) -> Path:
    """A new folder of the drill's own under `base` (created 0700; `base` must be yours and
    no symlink, the new folder never exists before)."""
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(base)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise RtoolError(f"drill folder {base}: not a folder of yours (or a symlink)")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(100):
        folder = base / (f"{name}-{stamp}" + (f"-{n}" if n else ""))
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return folder
    raise RtoolError(f"no new drill folder under {base}")


def throwaway(job: TrainingJob, folder: Path) -> TrainingJob:
    """The drill's copy of `job`, living in `folder`."""
    name = f"{job.job_name}-drill"
    array = first_tasks(job.array) if job.array else None
    env = [(k, v) for k, v in job.more_env if k != "RTOOL_RUN"]
    env.append(("RTOOL_RUN", name))
    return dataclasses.replace(
        job,
        job_name=name,
        output=str(folder / ("%x-%A_%a.out" if array else "%x-%j.out")),
        chdir=str(folder),
        heartbeat=str(folder / "heartbeat.json"),
        kill_switch=str(folder / "kill-switch"),
        save_switch=str(folder / "save-switch"),
        dependency=None,
        array=array,
        max_requeues=max(1, job.max_requeues),
        header_lines=override(job.header_lines, OWN) if job.header_lines else [],
        more_env=env,
        notes=[],
    )


def shared_paths(job: TrainingJob) -> list[str]:
    """Absolute paths among the script's arguments: the throw-away job writes there too."""
    return [a.split("=", 1)[-1] for a in job.script_args if a.split("=", 1)[-1].startswith("/")]
