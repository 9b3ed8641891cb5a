"""The small `scrontab` client of the local test cluster (scrontab_client.c), built with gcc.

Debian's slurm-client 22.05 ships no `scrontab`; this one speaks the real crontab RPCs to the
cluster's slurmctld through libslurmfull (headers from libslurm-dev). `build(folder)` compiles
it into `folder/scrontab` (once; rebuilt when the source is newer) and returns its path.
"""

from __future__ import annotations

import glob
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).with_name("scrontab_client.c")
HEADER = Path("/usr/include/slurm/slurm.h")


class ScrontabBuildError(RuntimeError):
    """The client cannot be built; the message says what is missing."""


def libdir() -> Path:
    found = glob.glob("/usr/lib/*/slurm-wlm/libslurmfull.so") + glob.glob(
        "/usr/lib*/slurm/libslurmfull.so"
    )
    if not found:
        raise ScrontabBuildError("libslurmfull.so not found (install slurm-client)")
    return Path(found[0]).parent


def build(folder: Path) -> Path:
    target = folder / "scrontab"
    if target.exists() and target.stat().st_mtime >= SOURCE.stat().st_mtime:
        return target
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise ScrontabBuildError("no C compiler (install gcc)")
    if not HEADER.exists():
        raise ScrontabBuildError(f"{HEADER} missing (install libslurm-dev)")
    lib = libdir()
    folder.mkdir(parents=True, exist_ok=True)
    argv = [cc, "-O1", "-o", str(target), str(SOURCE), f"-L{lib}", "-lslurmfull",
            f"-Wl,-rpath,{lib}"]  # fmt: skip
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise ScrontabBuildError(f"gcc failed: {res.stderr.strip()[-2000:]}")
    return target
