"""The Slurm releases the local cluster runs, and where each one's programs are.

- `22.05`: Debian 12's packages (`/usr/sbin`, `/usr/bin`), the default.
- `24.11`: 24.11.5 built from Debian 13's source package by `scripts/build-slurm`
  (devtools/localslurm/slurmbuild.py) into a prefix outside the checkout, keyed by version and
  checksum: `/opt/rtool-slurm/24.11.5-e1a5547e` (`$RTOOL_SLURM_PREFIX_ROOT` moves the root).

Daemons and clients always come from the same release: a 24.11 client against a 22.05 slurmdbd
fails with "Invalid Protocol Version". The tests and the demo choose with `RTOOL_TEST_SLURM`
(`scripts/local-slurm up --slurm 24.11` by hand). Standard library only: `scripts/setup` runs
this before the virtualenv exists.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: The environment variable that picks the release of the tests' and the demo's cluster.
ENV = "RTOOL_TEST_SLURM"
DEFAULT = "22.05"
PREFIX_ROOT_ENV = "RTOOL_SLURM_PREFIX_ROOT"
DEFAULT_PREFIX_ROOT = Path("/opt/rtool-slurm")
#: The marker a finished build leaves in its prefix (a half-finished one never has it).
MARKER = ".rtool-build.json"


class ReleaseError(RuntimeError):
    """An unknown release, or one whose programs are not installed; the message says why."""


@dataclass(frozen=True)
class Source:
    """A release built from a source tarball, verified by its sha256."""

    version: str  # 24.11.5
    tarball: str  # slurm-wlm_24.11.5.orig.tar.gz
    sha256: str
    debian_package: str = "slurm-wlm"
    debian_suite: str = "trixie"


@dataclass(frozen=True)
class Release:
    name: str  # `22.05`, `24.11`: what --slurm and RTOOL_TEST_SLURM take
    source: Source | None = None  # None: Debian's own packages

    @property
    def prefix(self) -> Path | None:
        """Where the build is installed (None for Debian's packages)."""
        if self.source is None:
            return None
        root = Path(os.environ.get(PREFIX_ROOT_ENV) or DEFAULT_PREFIX_ROOT)
        return root / f"{self.source.version}-{self.source.sha256[:8]}"

    @property
    def bindirs(self) -> list[Path]:
        """The folders of its programs, clients first."""
        if self.prefix is None:
            return [Path("/usr/bin"), Path("/usr/sbin")]
        return [self.prefix / "bin", self.prefix / "sbin"]

    @property
    def built(self) -> bool:
        """Debian's packages, or a finished build (its marker is there)."""
        return self.prefix is None or (self.prefix / MARKER).is_file()

    def program(self, name: str) -> str:
        """The absolute path of `slurmctld`, `scontrol`... of this release (never another's)."""
        for d in self.bindirs:
            if (d / name).is_file():
                return str(d / name)
        where = ", ".join(map(str, self.bindirs))
        raise ReleaseError(f"Slurm {self.name}: no {name} in {where}{self.hint()}")

    def hint(self) -> str:
        if self.source is None:
            return " (install Debian's slurmctld slurmd slurm-client slurmdbd)"
        return f" (build it: scripts/build-slurm --slurm {self.name})"

    def path_env(self, path: str | None = None) -> str:
        """PATH for this release: a built release's folders first; another release's folders
        taken out (Debian's /usr/bin and /usr/sbin stay, after the build's)."""
        given = path if path is not None else os.environ.get("PATH", "")
        mine = [str(d) for d in self.bindirs]
        others = {str(d) for r in RELEASES.values() if r.prefix is not None for d in r.bindirs}
        rest = [p for p in given.split(":") if p and p not in mine and p not in others]
        if self.prefix is None:
            return ":".join(rest + [d for d in mine if d not in rest])
        return ":".join(mine + rest)

    def check_trusted(self) -> None:
        """A built prefix runs as root here: refuse one (or its root, or its bin folders) that
        is a symlink, another user's, or group/world-writable."""
        if self.prefix is None:
            return
        if not self.built:
            raise ReleaseError(f"Slurm {self.name} is not built in {self.prefix}{self.hint()}")
        for d in (self.prefix.parent, self.prefix, *self.bindirs):
            trusted_dir(d, f"Slurm {self.name}")


def trusted_dir(d: Path, what: str) -> None:
    """ReleaseError unless `d` is a plain folder of root or this user, not group/world-writable."""
    try:
        st = os.lstat(d)
    except OSError as exc:
        raise ReleaseError(f"{what}: {exc}") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise ReleaseError(f"{what}: {d} is not a plain folder")
    if st.st_uid not in (0, os.geteuid()) or st.st_mode & 0o022:
        raise ReleaseError(f"{what}: {d} is owned by uid {st.st_uid} or writable by others")


RELEASES: dict[str, Release] = {
    "22.05": Release("22.05"),
    "24.11": Release(
        "24.11",
        Source(
            version="24.11.5",
            tarball="slurm-wlm_24.11.5.orig.tar.gz",
            sha256="e1a5547edd212c38b5e3230a284133f777b32746551f094aaa81cc4af375e332",
        ),
    ),
}


def get(name: str | None = None) -> Release:
    """The release named `name` (`24.11`, also `24.11.5`), else $RTOOL_TEST_SLURM, else 22.05."""
    wanted = (name or os.environ.get(ENV) or DEFAULT).strip()
    short = ".".join(wanted.split(".")[:2])
    if short not in RELEASES:
        known = ", ".join(RELEASES)
        raise ReleaseError(f"unknown Slurm release {wanted!r} (known: {known})")
    return RELEASES[short]


#: The clients rtool and the tests run: each must come from the chosen release's folders.
CLIENTS = ("squeue", "scontrol", "sbatch", "scancel", "sacct", "sinfo", "srun")
_VERSION = re.compile(r"slurm(?:-wlm)? (\d+\.\d+\.\d+)")


def check_clients(release: Release, path: str | None = None) -> None:
    """ReleaseError unless every client on PATH (or `path`) is this release's own."""
    mine = {d.resolve() for d in release.bindirs}
    for name in CLIENTS:
        found = shutil.which(name, path=path)
        if found is None or Path(found).resolve().parent not in mine:
            where = found or "nothing"
            raise ReleaseError(f"PATH gives {where} for {name}, not Slurm {release.name}'s")


def version(env: dict[str, str]) -> str | None:
    """`24.11.5` from `scontrol --version` with `env` (Slurm clients need a SLURM_CONF that
    parses even for --version), None when it fails."""
    try:
        res = subprocess.run(["scontrol", "--version"], capture_output=True, text=True,
                             timeout=20, env={**os.environ, **env})  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _VERSION.search(res.stdout)
    return m.group(1) if m else None
