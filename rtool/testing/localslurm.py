"""A real single-node Slurm on this machine, for the tests and the demo.

    python -m rtool.testing.localslurm up [--dir DIR]   # install if missing, start, wait
    python -m rtool.testing.localslurm status [--dir DIR]
    python -m rtool.testing.localslurm down [--dir DIR]

`up` prints `export SLURM_CONF=DIR/slurm.conf`; every Slurm command must see that variable.
Works as root without systemd or cgroups (see shared/slurm-local.md). Daemons are stopped by
the pids in their pid files, never by name. Ports are picked free, so clusters can coexist.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DIR = Path(os.environ.get("RTOOL_SLURM_DIR", "/tmp/rtool-slurm"))
PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
BINARIES = ["slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "munged"]


class LocalSlurmError(RuntimeError):
    """The local Slurm could not be installed or started; the message says why."""


@dataclass
class Cluster:
    dir: Path

    @property
    def conf(self) -> Path:
        return self.dir / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def pid(self, daemon: str) -> int | None:
        try:
            return int((self.dir / f"{daemon}.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def alive(self, daemon: str) -> bool:
        pid = self.pid(daemon)
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return False


def _sh(
    argv: list[str], timeout: float = 60, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    try:
        res = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=full,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise LocalSlurmError(f"{' '.join(argv)} timed out after {timeout}s") from None
    except FileNotFoundError:
        raise LocalSlurmError(f"{argv[0]} not found") from None
    if check and res.returncode != 0:
        raise LocalSlurmError(f"{' '.join(argv)} failed ({res.returncode}): {res.stderr.strip()}")
    return res


def ensure_installed() -> None:
    """Install Debian's Slurm and munge packages when a binary is missing (needs root)."""
    missing = [b for b in BINARIES if not (shutil.which(b) or Path("/usr/sbin", b).exists())]
    if not missing:
        return
    if os.geteuid() != 0:
        raise LocalSlurmError(f"missing {', '.join(missing)}; install {' '.join(PACKAGES)} as root")
    print(f"installing {' '.join(PACKAGES)} (missing: {', '.join(missing)})", file=sys.stderr)
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    _sh(["apt-get", "update", "-qq"], timeout=600, env=env)
    _sh(["apt-get", "install", "-y", "-qq", *PACKAGES], timeout=900, env=env)


def ensure_munge() -> None:
    """Start munged unless a credential round-trip already works."""
    if _munge_ok():
        return
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        _sh(["mungekey", "--create"] if shutil.which("mungekey") else ["create-munge-key"])
    run_dir = Path("/run/munge")
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.chown(run_dir, "munge", "munge")
    _sh([_sbin("munged"), "--force"], check=False)
    for _ in range(50):
        if _munge_ok():
            return
        time.sleep(0.1)
    raise LocalSlurmError("munged did not start (munge -n | unmunge fails)")


def _munge_ok() -> bool:
    try:
        cred = subprocess.run(["munge", "-n"], capture_output=True, timeout=5)
        if cred.returncode != 0:
            return False
        out = subprocess.run(["unmunge"], input=cred.stdout, capture_output=True, timeout=5)
        return out.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _sbin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _node_line() -> str:
    host = socket.gethostname()
    out = _sh([_sbin("slurmd"), "-C"]).stdout.splitlines()[0]
    fields = dict(kv.split("=", 1) for kv in out.split() if "=" in kv)
    cpus = fields.get("CPUs", str(os.cpu_count() or 1))
    mem = int(fields.get("RealMemory", "2048"))
    mem = max(512, min(mem - 1024, int(mem * 0.9)))
    return f"NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem} State=UNKNOWN"


def write_conf(cluster: Cluster, fast: bool = True) -> None:
    d = cluster.dir
    for sub in ("state", "spool", "log"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    host = socket.gethostname()
    ctld_port, slurmd_port = _free_ports(2)
    lines = [
        "ClusterName=rtoollocal",
        f"SlurmctldHost={host}(127.0.0.1)",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        f"StateSaveLocation={d / 'state'}",
        f"SlurmdSpoolDir={d / 'spool'}",
        f"SlurmctldPidFile={d / 'slurmctld.pid'}",
        f"SlurmdPidFile={d / 'slurmd.pid'}",
        f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={d / 'log' / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SchedulerType=sched/backfill",
        "ReturnToService=2",
        "MpiDefault=none",
        "KillWait=10",
        "MinJobAge=600",
        "MaxArraySize=10001",
        # A requeued job waits cred_expire seconds before it may start again (default 120).
        "AuthInfo=cred_expire=15",
    ]
    if fast:
        lines.append("SchedulerParameters=bf_interval=1,sched_interval=2")
    lines += [
        _node_line(),
        f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP "
        "OverSubscribe=FORCE:4",
    ]
    cluster.conf.write_text("\n".join(lines) + "\n")


def status(cluster: Cluster) -> str | None:
    """The node state (`idle`, `mixed`...) or None when the cluster is not up.

    The controller that answers must be this cluster's own (its StateSaveLocation is ours):
    with free ports picked at random, two clusters started at once could otherwise collide.
    """
    if not (cluster.conf.exists() and cluster.alive("slurmctld") and cluster.alive("slurmd")):
        return None
    if not _is_ours(cluster):
        return None
    res = _sh(["sinfo", "-h", "-o", "%T"], env=cluster.env, timeout=10, check=False)
    return res.stdout.strip() or None if res.returncode == 0 else None


def _is_ours(cluster: Cluster) -> bool:
    res = _sh(["scontrol", "show", "config"], env=cluster.env, timeout=10, check=False)
    for line in res.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "StateSaveLocation":
            return value.strip() == str(cluster.dir / "state")
    return False


def up(directory: Path = DEFAULT_DIR, fast: bool = True, timeout: float = 90) -> Cluster:
    """Start (or reuse) the cluster in `directory` and wait until its node takes jobs."""
    cluster = Cluster(Path(directory).resolve())
    ensure_installed()
    ensure_munge()
    if status(cluster) in READY:
        return cluster
    state: str | None = None
    for _attempt in range(3):  # a port taken between picking and binding: new ports, again
        down(cluster.dir)
        cluster.dir.mkdir(parents=True, exist_ok=True)
        write_conf(cluster, fast=fast)
        _sh([_sbin("slurmctld"), "-f", str(cluster.conf)], env=cluster.env)
        _sh([_sbin("slurmd"), "-f", str(cluster.conf)], env=cluster.env)
        state = _wait_ready(cluster, timeout / 3)
        if state in READY:
            return cluster
    down(cluster.dir)
    log_tail = _tail(cluster.dir / "log" / "slurmctld.log") + _tail(
        cluster.dir / "log" / "slurmd.log"
    )
    raise LocalSlurmError(
        f"local Slurm did not become idle in {timeout:g}s (node: {state})\n" + log_tail
    )


READY = ("idle", "mixed", "allocated")


def _wait_ready(cluster: Cluster, timeout: float) -> str | None:
    deadline = time.monotonic() + timeout
    state = None
    while time.monotonic() < deadline:
        state = status(cluster)
        if state in READY:
            return state
        if state and ("down" in state or "drain" in state):
            host = socket.gethostname()
            _sh(
                ["scontrol", "update", f"nodename={host}", "state=resume"],
                env=cluster.env,
                check=False,
            )
        if not (cluster.alive("slurmctld") and cluster.alive("slurmd")):
            time.sleep(1)
            if not (cluster.alive("slurmctld") and cluster.alive("slurmd")):
                return None
        time.sleep(0.5)
    return state


def _tail(path: Path, n: int = 15) -> str:
    try:
        return f"--- {path}\n" + "\n".join(path.read_text().splitlines()[-n:]) + "\n"
    except OSError:
        return ""


def down(directory: Path = DEFAULT_DIR) -> None:
    """Stop the cluster's daemons by their pid files (SIGTERM, then SIGKILL)."""
    cluster = Cluster(Path(directory).resolve())
    for daemon in ("slurmd", "slurmctld"):
        pid = cluster.pid(daemon)
        if pid is None or not cluster.alive(daemon):
            continue
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if not cluster.alive(daemon):
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="local-slurm",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=["up", "down", "status"])
    p.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"default {DEFAULT_DIR}")
    p.add_argument(
        "--slow",
        action="store_true",
        help="default scheduler intervals (as on real clusters) instead of the fast test settings",
    )
    args = p.parse_args(argv)
    try:
        if args.action == "up":
            cluster = up(args.dir, fast=not args.slow)
            print(f"export SLURM_CONF={cluster.conf}")
        elif args.action == "down":
            down(args.dir)
        else:
            state = status(Cluster(args.dir.resolve()))
            print(state or "down")
            return 0 if state else 1
    except LocalSlurmError as exc:
        print(f"local-slurm: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
