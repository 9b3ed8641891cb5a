"""A second Unix user on this machine: the "other user" of a shared cluster, for tests.

    peer = ensure_user()                          # `rtool-peer`, also in group `rtool-peers`
    folder = peer.folder("jobs-")                 # a fresh folder of theirs (in their home)
    peer.run(["sbatch", "--wrap", "exit 1"], cwd=folder, env=cluster.env)

Created with `groupadd`/`useradd` (needs root, as the tests run on CI); idempotent, and safe
when several test sessions start at once (a locked passwd file is waited for). The shared
group lets a test build a group-writable project folder both users write into.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PEER = "rtool-peer"
PEER_GROUP = "rtool-peers"
#: useradd/groupadd exit codes: 9 the name is taken (by a concurrent creator: fine), 10 and 1
#: a locked passwd/group file (retried).
TAKEN, LOCKED = 9, (1, 10)


class LocalUserError(RuntimeError):
    """The user cannot be created or a command of theirs failed; the message says why."""


@dataclass(frozen=True)
class LocalUser:
    name: str
    uid: int
    gid: int
    home: Path
    groups: tuple[int, ...]

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A clean login-like environment of the user (SLURM_CONF carried over)."""
        env = {
            "HOME": str(self.home),
            "USER": self.name,
            "LOGNAME": self.name,
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
        }
        if os.environ.get("SLURM_CONF"):
            env["SLURM_CONF"] = os.environ["SLURM_CONF"]
        return {**env, **(extra or {})}

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        input: str | None = None,
        timeout: float = 60.0,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Run `argv` as this user (its uid, gid and groups); raises LocalUserError when it
        fails and `check`."""
        res = subprocess.run(
            list(argv),
            user=self.uid,
            group=self.gid,
            extra_groups=list(self.groups),
            cwd=str(cwd or self.home),
            env=self.env(env),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and res.returncode != 0:
            why = (res.stderr or res.stdout).strip()[-500:]
            raise LocalUserError(f"{argv[0]} as {self.name} exited {res.returncode}: {why}")
        return res

    def folder(self, prefix: str = "rtool-test-") -> Path:
        """A fresh folder owned by the user, in its home (remove it with `remove`)."""
        d = Path(tempfile.mkdtemp(prefix=prefix, dir=self.home))
        os.chown(d, self.uid, self.gid)
        os.chmod(d, 0o755)
        return d

    def remove(self, folder: Path) -> None:
        if folder.resolve().is_relative_to(self.home.resolve()):
            shutil.rmtree(folder, ignore_errors=True)


def _admin(argv: list[str], ok: tuple[int, ...] = (0,)) -> None:
    """Run a user-database command, waiting out another session's lock (bounded)."""
    last = ""
    for _ in range(30):
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        except FileNotFoundError:
            why = f"{argv[0]} is not installed (Debian: the passwd package)"
            raise LocalUserError(why) from None
        if res.returncode in ok:
            return
        last = (res.stderr or res.stdout).strip()
        if res.returncode not in LOCKED:
            break
        time.sleep(0.5)
    raise LocalUserError(f"{' '.join(argv)} failed: {last}")


def ensure_group(name: str = PEER_GROUP) -> int:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        pass
    _admin(["groupadd", "-f", name])
    return grp.getgrnam(name).gr_gid


def ensure_user(name: str = PEER, group: str = PEER_GROUP) -> LocalUser:
    """The user `name` (created with a home and its own group when missing), member of
    `group`. Needs root to create; an existing user is only looked up."""
    if os.geteuid() != 0:
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            raise LocalUserError(f"user {name} is missing and only root can create it") from None
        return _user(pw)
    gid = ensure_group(group)
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        args = ["useradd", "--create-home", "--shell", "/bin/bash", "--user-group"]
        _admin([*args, "--groups", group, name], ok=(0, TAKEN))
        pw = pwd.getpwnam(name)
    if gid not in os.getgrouplist(name, pw.pw_gid):
        _admin(["usermod", "--append", "--groups", group, name])
    home = Path(pw.pw_dir)
    if not home.is_dir():  # an account made elsewhere without a home
        home.mkdir(mode=0o755, parents=True)
        os.chown(home, pw.pw_uid, pw.pw_gid)
    return _user(pwd.getpwnam(name))


def _user(pw: pwd.struct_passwd) -> LocalUser:
    groups = tuple(g for g in os.getgrouplist(pw.pw_name, pw.pw_gid) if g != pw.pw_gid)
    return LocalUser(pw.pw_name, pw.pw_uid, pw.pw_gid, Path(pw.pw_dir), groups)


def shared_folder(user: LocalUser, parent: Path | None = None, group: str = PEER_GROUP) -> Path:
    """A group-writable project folder (2775, yours, group `group`) that `user` can reach: in
    `parent` (default the system temp folder, which everyone may traverse). Remove it after."""
    gid = ensure_group(group)
    if gid not in (user.gid, *user.groups):
        raise LocalUserError(f"{user.name} is not in group {group}")
    d = Path(tempfile.mkdtemp(prefix="rtool-shared-", dir=parent or tempfile.gettempdir()))
    os.chown(d, -1, gid)
    os.chmod(d, 0o2775)
    return d
