"""What the training ran with, for the ledger (docs/guide/provenance.md): the git revision of
the script's repository (and whether it was dirty), the imported packages' versions and a hash
of each file named on its command line. Collected once, in a daemon thread started at the first
step (the imports are done by then), so the training never waits; `git` has a timeout and files
are hashed up to a size.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: `git` gets this long (seconds) per command; a slow filesystem gives no code version.
GIT_TIMEOUT = 10.0
#: Files larger than this are named by size and time, not hashed; at most MAX_FILES of them.
MAX_HASHED = 64 * 1024 * 1024
MAX_FILES = 16
#: The heartbeat's strings stay small.
MAX_TEXT = 4096


def git_version(script: str | None, timeout: float = GIT_TIMEOUT) -> str | None:
    """`<revision> (clean|dirty)` of the repository holding `script`, None outside one."""
    if not script:
        return None
    folder = Path(script).resolve().parent
    rev = _git(folder, timeout, "rev-parse", "HEAD")
    if rev is None:
        return None
    status = _git(folder, timeout, "status", "--porcelain", "--untracked-files=no")
    state = "unknown" if status is None else ("dirty" if status else "clean")
    return f"{rev[:12]} ({state})"


def _git(folder: Path, timeout: float, *args: str) -> str | None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        out = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**env, "GIT_OPTIONAL_LOCKS": "0"},
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def package_versions(modules: Iterable[str]) -> str | None:
    """`name==version` of the installed distributions the imported `modules` come from
    (standard library left out), sorted; None when there is none."""
    tops = {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names)
    tops = {t for t in tops if t and not t.startswith("_")}
    try:
        owners: Mapping[str, list[str]] = importlib.metadata.packages_distributions()
    except Exception:  # a broken installed distribution: no versions, not a crash
        return None
    found: dict[str, str] = {}
    for top in sorted(tops):
        for dist in owners.get(top, []):
            try:
                found[dist.lower()] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
    text = " ".join(f"{k}=={v}" for k, v in sorted(found.items()))
    return text[:MAX_TEXT] or None


def input_hashes(argv: list[str]) -> str | None:
    """`name sha256:<12 hex>` for each regular file named on the command line (`--x PATH`,
    `--x=PATH`, `PATH`), your own or root's; at most MAX_FILES, each read up to MAX_HASHED."""
    out: list[str] = []
    for arg in argv:
        path = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if len(out) >= MAX_FILES or not path or path.startswith("-"):
            continue
        digest = _hash(path)
        if digest is not None:
            out.append(f"{os.path.basename(path)} {digest}")
    return "; ".join(out)[:MAX_TEXT] or None


def _hash(path: str) -> str | None:
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid not in (os.getuid(), 0):
            return None
        if st.st_size > MAX_HASHED:
            return f"size:{st.st_size} mtime:{int(st.st_mtime)}"
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return f"sha256:{h.hexdigest()[:12]}"
    except OSError:
        return None
    finally:
        os.close(fd)


class Provenance:
    """Collects once, in the background, when `start()` is first called."""

    def __init__(self, argv: list[str] | None = None) -> None:
        self._argv = list(sys.argv if argv is None else argv)
        self._fields: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(
                target=self._collect, name="rtool-provenance", daemon=True
            )
            self._thread.start()

    def wait(self, timeout: float) -> None:
        """Give a collection under way up to `timeout` seconds (at the end of a short run)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _collect(self) -> None:
        script = self._argv[0] if self._argv and self._argv[0] not in ("-c", "-m", "") else None
        fields = {
            "code_version": git_version(script),
            "packages": package_versions(list(sys.modules)),
            "inputs": input_hashes(self._argv[1:]),
        }
        with self._lock:
            self._fields = fields

    def fields(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._fields)
