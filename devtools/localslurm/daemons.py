"""The local cluster's processes: bounded commands, pid files, stopping by pid, and accounting.

Accounting: the cluster's own MariaDB and slurmdbd, as plain processes. Data lives under the
cluster's folder (db/); both are stopped by their pid files. mariadbd does not daemonize itself,
so it is detached with `setsid -f` (a runner that kills its process group must not take the
database with it).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from devtools.localslurm.slurmconf import (
    CLUSTER_NAME,
    DB_NAME,
    DB_USER,
    Layout,
    db_password,
    system_program,
    write_dbd_conf,
)


class LocalSlurmError(RuntimeError):
    """The local Slurm could not be installed or started; the message says why."""


def sh(
    argv: list[str],
    timeout: float = 60,
    env: dict[str, str] | None = None,
    check: bool = True,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run argv (no shell) with a timeout; LocalSlurmError on failure when `check`."""
    full = {**os.environ, **(env or {})}
    try:
        res = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=full,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise LocalSlurmError(f"{shlex.join(argv)} timed out after {timeout:g}s") from None
    except FileNotFoundError:
        raise LocalSlurmError(f"{argv[0]} not found") from None
    if check and res.returncode != 0:
        detail = (res.stderr or res.stdout).strip()
        raise LocalSlurmError(f"{shlex.join(argv)} failed ({res.returncode}): {detail}")
    return res


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def pid_alive(pid: int | None) -> bool:
    if pid is None or pid <= 1:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return not Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return True


def pid_is(pid: int | None, program: str) -> bool:
    """The live process `pid` runs `program` (a stale pid file may name a reused pid)."""
    if not pid_alive(pid):
        return False
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == program[:15]
    except OSError:
        return False


def stop_pid(pid: int | None, program: str, grace: float = 10.0) -> None:
    """SIGTERM `pid` when it runs `program`, wait up to `grace` s, then SIGKILL."""
    stop_pids([(pid, program)], grace)


def stop_pids(pids: list[tuple[int | None, str]], grace: float = 10.0) -> None:
    """`stop_pid` for many at once: SIGTERM to every one, then wait for them together (64
    slurmd stop in about the time of one), SIGKILL what is left after `grace` s."""
    mine = [pid for pid, program in pids if pid is not None and pid_is(pid, program)]
    for pid in mine:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    if wait_until(lambda: not any(pid_alive(p) for p in mine), grace):
        return
    for pid in mine:
        if pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not any(pid_alive(p) for p in mine), 5)


def wait_until(cond: Callable[[], object], timeout: float, step: float = 0.2) -> bool:
    """Poll `cond` until true or `timeout` seconds pass; True when it became true."""
    deadline = time.monotonic() + timeout
    while True:
        if cond():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)


def tail(path: Path, n: int = 15) -> str:
    try:
        return f"--- {path}\n" + "\n".join(path.read_text().splitlines()[-n:]) + "\n"
    except OSError:
        return ""


def _mariadb(directory: Path, *args: str, sql: str | None = None, check: bool = True) -> bool:
    """Run the `mariadb` client on the cluster's own database, as its root; True when it
    succeeds (LocalSlurmError when it fails and `check`)."""
    socket = f"--socket={directory / 'mysql.sock'}"
    argv = ["mariadb", "--no-defaults", socket, "-u", "root", *args]
    return sh(argv, input=sql, timeout=20, check=check).returncode == 0


def start_database(directory: Path, layout: Layout, timeout: float = 60) -> None:
    datadir = directory / "db"
    made = datadir / ".rtool-installed"  # written once the install finished: a try cut short
    if not made.is_file():  # under load leaves a datadir whose root nobody can log in as
        shutil.rmtree(datadir, ignore_errors=True)
        sh(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={datadir}",
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            timeout=120,
        )
        made.touch()
    sh(
        [
            "setsid",
            "-f",
            system_program("mariadbd"),
            "--no-defaults",
            f"--datadir={datadir}",
            "--user=root",
            f"--socket={directory / 'mysql.sock'}",
            f"--port={layout.db_port}",
            "--bind-address=127.0.0.1",
            f"--pid-file={directory / 'mariadbd.pid'}",
            f"--log-error={directory / 'log' / 'mariadbd.log'}",
            "--skip-name-resolve",
            "--innodb-buffer-pool-size=64M",
        ],
        timeout=20,
    )
    if not wait_until(lambda: _mariadb(directory, "-e", "SELECT 1", check=False), timeout, 0.3):
        raise LocalSlurmError(
            f"MariaDB did not answer in {timeout:g}s\n" + tail(directory / "log" / "mariadbd.log")
        )
    pw = db_password(directory)
    grants = "".join(
        f"CREATE USER IF NOT EXISTS '{DB_USER}'@'{h}' IDENTIFIED BY '{pw}';"
        f"GRANT ALL ON {DB_NAME}.* TO '{DB_USER}'@'{h}';"
        for h in ("127.0.0.1", "localhost")
    )
    _mariadb(directory, sql=grants + "FLUSH PRIVILEGES;")


def start_slurmdbd(
    directory: Path, layout: Layout, env: dict[str, str], slurmdbd: str, timeout: float
) -> None:
    """Start `slurmdbd` (the release's, by absolute path); `env` puts its clients first."""
    write_dbd_conf(directory, layout)
    sh([slurmdbd], env=env, timeout=30)

    def answers() -> bool:
        res = sh(["sacctmgr", "-n", "-P", "show", "cluster"], env=env, timeout=15, check=False)
        return res.returncode == 0

    if not wait_until(answers, timeout, step=0.3):
        raise LocalSlurmError(
            f"slurmdbd did not answer in {timeout:g}s\n" + tail(directory / "log" / "slurmdbd.log")
        )
    shown = sh(["sacctmgr", "-n", "-P", "show", "cluster", "format=cluster"], env=env, timeout=15)
    if CLUSTER_NAME not in shown.stdout.split():
        sh(["sacctmgr", "-i", "add", "cluster", CLUSTER_NAME], env=env, timeout=30)
