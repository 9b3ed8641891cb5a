"""The `scrontab` command of the local test cluster: the release's own, or for 22.05 a small
client (scrontab_client.c) built with gcc.

Debian's slurm-client 22.05 ships no `scrontab`; the client speaks the real crontab RPCs to the
cluster's slurmctld through Debian's libslurmfull (headers from libslurm-dev), so it works
against 22.05 only. 24.11 (built from source) has the real command. `command(release, folder)`
gives the one to use; `build(folder)` compiles the client into `folder/scrontab` (once; rebuilt
when the source is newer) and returns its path.
"""

from __future__ import annotations

import glob
import shutil
import subprocess
from pathlib import Path

from devtools.localslurm.releases import Release, ReleaseError

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


def command(release: Release, folder: Path) -> Path:
    """The release's own `scrontab`; for Debian's 22.05 (which has none) the built client."""
    try:
        return Path(release.program("scrontab"))
    except ReleaseError:
        if release.source is not None:
            raise ScrontabBuildError(f"Slurm {release.name} has no scrontab") from None
    return build(folder)
