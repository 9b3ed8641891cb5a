"""Accounting for the local cluster: its own MariaDB and slurmdbd, as plain processes.

Data lives under the cluster's folder (db/); both are stopped by their pid files. mariadbd does
not daemonize itself, so it is detached with `setsid -f` (a runner that kills its process group
must not take the database with it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from devtools.localslurm.daemons import LocalSlurmError, sh, tail, wait_until
from devtools.localslurm.slurmconf import (
    CLUSTER_NAME,
    DB_NAME,
    DB_USER,
    Layout,
    db_password,
    system_program,
    write_dbd_conf,
)


def _mariadb(directory: Path, *args: str, sql: str | None = None, check: bool = True) -> bool:
    """Run the `mariadb` client on the cluster's own database, as its root; True when it
    succeeds (LocalSlurmError when it fails and `check`)."""
    socket = f"--socket={directory / 'mysql.sock'}"
    argv = ["mariadb", "--no-defaults", socket, "-u", "root", *args]
    return sh(argv, input=sql, timeout=20, check=check).returncode == 0


def start_database(directory: Path, layout: Layout, timeout: float = 60) -> None:
    datadir = directory / "db"
    if not (datadir / "mysql").is_dir():
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
