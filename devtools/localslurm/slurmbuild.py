"""Build a Slurm release from source once, into a prefix outside the checkout (releases.py).

    python -m devtools.localslurm.slurmbuild [--slurm 24.11] [--jobs N] [--check]
    (scripts/build-slurm)

The source tarball comes, verified by its sha256 whichever way it came, from the first of:
`$RTOOL_SLURM_SOURCE` (the tarball or a folder holding it); Debian's source archive through apt
(a private deb-src entry for the release's suite: the machine's apt sources are not touched);
the `shared/slurm/` folder beside the checkout; `/work/shared/slurm`.
Build dependencies come from Debian 12 (apt-get, as root). The build runs in a temp folder
under the prefix root, installs with DESTDIR into it and is renamed into place at the end,
with a marker file: a half-finished build is never taken for a cached one. A lock file keeps
two builds from racing. Standard library only: `scripts/setup` runs it before the virtualenv.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from devtools.localslurm.releases import MARKER, Release, ReleaseError, Source, get, trusted_dir

BUILD_DEPS = [
    "libmunge-dev",
    "libmariadb-dev",
    "libjson-c-dev",
    "libyaml-dev",
    "libhttp-parser-dev",
    "libjwt-dev",
    "liblz4-dev",
    "libcurl4-openssl-dev",
    "libpam0g-dev",
    "libdbus-1-dev",
    "build-essential",
    "pkg-config",
]
SOURCE_ENV = "RTOOL_SLURM_SOURCE"
HERE = Path(__file__).resolve().parent
#: Copies of the tarball for machines where Debian's archive does not serve it.
SHARED = [HERE.parent.parent.parent / "shared" / "slurm", Path("/work/shared/slurm")]


class BuildError(RuntimeError):
    """The release could not be fetched or built; the message says why."""


def say(msg: str) -> None:
    print(f"build-slurm: {msg}", file=sys.stderr, flush=True)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verified(path: Path, src: Source, tried: list[str]) -> Path | None:
    if not path.is_file():
        tried.append(f"{path}: missing")
        return None
    got = sha256(path)
    if got != src.sha256:
        tried.append(f"{path}: sha256 {got[:16]}..., expected {src.sha256[:16]}...")
        return None
    return path


def _apt(args: list[str], work: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """apt-get/apt-cache with a private sources list, lists and cache under `work`."""
    opts = [
        f"-oDir::Etc::SourceList={work / 'sources.list'}",
        "-oDir::Etc::SourceParts=/dev/null",
        f"-oDir::State::Lists={work / 'lists'}",
        f"-oDir::Cache={work / 'cache'}",
    ]
    if os.geteuid() == 0:
        opts.append("-oAPT::Sandbox::User=root")  # _apt cannot write into our private folder
    return subprocess.run(
        [args[0], *opts, *args[1:]], capture_output=True, text=True, timeout=timeout, cwd=work
    )


def from_apt(src: Source, work: Path, tried: list[str]) -> Path | None:
    """The orig tarball from Debian's source archive (deb-src for `src.debian_suite`)."""
    if shutil.which("apt-get") is None:
        tried.append("apt: no apt-get")
        return None
    for sub in ("lists/partial", "cache/archives/partial"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    (work / "sources.list").write_text(
        "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
        f"http://deb.debian.org/debian {src.debian_suite} main\n"
    )
    try:
        res = _apt(["apt-get", "update"], work, 300)
        if res.returncode != 0:
            tried.append(f"apt: update failed: {res.stderr.strip()[-300:]}")
            return None
        shown = _apt(["apt-cache", "showsrc", src.debian_package], work, 60).stdout
        version = _version_with(shown, src)
        if version is None:
            tried.append(f"apt: no {src.tarball} in {src.debian_suite}'s {src.debian_package}")
            return None
        spec = f"{src.debian_package}={version}"
        res = _apt(["apt-get", "source", "--download-only", "--tar-only", spec], work, 600)
    except subprocess.TimeoutExpired as exc:
        tried.append(f"apt: {exc}")
        return None
    if res.returncode != 0:
        tried.append(f"apt: source failed: {res.stderr.strip()[-300:]}")
        return None
    return _verified(work / src.tarball, src, tried)


def _version_with(showsrc: str, src: Source) -> str | None:
    """The source package version whose files include our tarball with our sha256."""
    for stanza in showsrc.split("\n\n"):
        version = re.search(r"^Version:[ \t]*(\S+)", stanza, re.MULTILINE)
        if version and f"{src.sha256} " in stanza and src.tarball in stanza:
            return version[1]
    return None


def fetch(src: Source, work: Path) -> Path:
    """The verified tarball (see the module doc for the order); BuildError listing what failed."""
    tried: list[str] = []
    given = os.environ.get(SOURCE_ENV)
    if given:
        p = Path(given)
        found = _verified(p / src.tarball if p.is_dir() else p, src, tried)
        if found:
            return found
    found = from_apt(src, work / "apt", tried)
    if found:
        return found
    for folder in SHARED:
        found = _verified(folder / src.tarball, src, tried)
        if found:
            return found
    raise BuildError(f"no verified {src.tarball}:\n  " + "\n  ".join(tried))


def ensure_deps() -> None:
    """Install the build dependencies that are missing (Debian 12's packages; needs root)."""
    missing = []
    for pkg in BUILD_DEPS:
        res = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True, timeout=30
        )
        if "install ok installed" not in res.stdout:
            missing.append(pkg)
    if not missing:
        return
    if os.geteuid() != 0:
        raise BuildError(
            f"build dependencies missing; run as root: apt-get install {' '.join(missing)}"
        )
    say(f"installing build dependencies: {' '.join(missing)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *missing]):
        res = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env)
        if res.returncode != 0:
            raise BuildError(f"{' '.join(argv)} failed: {res.stderr.strip()[-500:]}")


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _step(argv: list[str], cwd: Path, log: Path, timeout: float) -> None:
    say(f"{argv[0]} {argv[1] if len(argv) > 1 else ''} ...")
    with open(log, "a") as out:
        try:
            res = subprocess.run(
                argv,
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise BuildError(f"{' '.join(argv)} ran past {timeout:g}s (log {log})") from None
    if res.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
        raise BuildError(f"{' '.join(argv)} failed ({res.returncode}):\n{tail}")


def _compile(src: Source, tarball: Path, prefix: Path, work: Path, jobs: int) -> Path:
    """Unpack, configure, make, install into work/stage; returns the staged prefix."""
    with tarfile.open(tarball) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(work / "src", filter="data")
        else:  # Python < 3.10.12: the tarball's checksum was verified
            tar.extractall(work / "src")
    tree = next((work / "src").iterdir())
    log = work / "build.log"
    configure = [
        "./configure",
        f"--prefix={prefix}",
        f"--sysconfdir={prefix}/etc",
        "--with-munge",
        "--with-mysql_config=/usr/bin",
        "--enable-multiple-slurmd",
        "--disable-debug",
    ]
    _step(configure, tree, log, 900)
    _step(["make", f"-j{jobs}"], tree, log, 3600)
    _step(["make", "install", f"DESTDIR={work / 'stage'}"], tree, log, 900)
    staged = work / "stage" / prefix.relative_to("/")
    if not (staged / "sbin" / "slurmctld").is_file():
        raise BuildError(f"make install left no sbin/slurmctld in {staged}")
    return staged


def build(release: Release, jobs: int | None = None) -> Path:
    """The release's prefix, built first when no finished build is there. Idempotent."""
    src, prefix = release.source, release.prefix
    if src is None or prefix is None:
        raise BuildError(f"Slurm {release.name} is Debian's package: nothing to build")
    if release.built:
        release.check_trusted()
        return prefix
    root = prefix.parent
    root.mkdir(mode=0o755, parents=True, exist_ok=True)
    trusted_dir(root, "the build root")  # what is built here runs as root
    with locked(root):
        if release.built:  # another process finished it while we waited
            release.check_trusted()
            return prefix
        for stale in root.glob(".build-*"):  # left by a build that died (we hold the lock)
            shutil.rmtree(stale, ignore_errors=True)
        if prefix.exists():  # no marker: not ours to trust
            shutil.rmtree(prefix)
        start = time.monotonic()
        work = Path(tempfile.mkdtemp(prefix=f".build-{src.version}-", dir=root))
        try:
            tarball = fetch(src, work)
            say(f"{src.tarball} verified (sha256 {src.sha256[:8]}...), from {tarball.parent}")
            ensure_deps()
            staged = _compile(src, tarball, prefix, work, jobs or os.cpu_count() or 2)
            info = {
                "version": src.version,
                "sha256": src.sha256,
                "built": time.time(),
                "seconds": round(time.monotonic() - start),
            }
            (staged / MARKER).write_text(json.dumps(info) + "\n")
            staged.chmod(0o755)
            os.rename(staged, prefix)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        say(f"Slurm {src.version} built in {time.monotonic() - start:.0f}s: {prefix}")
    release.check_trusted()
    return prefix


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="build-slurm",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--slurm", default="24.11", help="the release to build (default 24.11)")
    p.add_argument("--jobs", type=int, default=None, help="make -jN (default: the CPU count)")
    p.add_argument("--check", action="store_true", help="exit 1 if not built; build nothing")
    args = p.parse_args(argv)
    try:
        release = get(args.slurm)
        if release.source is None or args.check:
            print(release.prefix or "debian (Debian's packages: nothing to build)")
            return 0 if release.built else 1
        print(build(release, args.jobs))
    except (BuildError, ReleaseError, OSError) as exc:
        say(str(exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
