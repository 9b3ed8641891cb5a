"""A real Slurm on this machine, for the tests and the demo: N slurmd nodes, with accounting.

    python -m devtools.localslurm up [--slurm 22.05|24.11] [--nodes N]
                                          [--accounting|--no-accounting] [--dir DIR]
    python -m devtools.localslurm status [--dir DIR]
    python -m devtools.localslurm down [--dir DIR]

Default: 3 nodes `n1..n3` on this host (one slurmd each, on its own port) with accounting
(slurmdbd and a MariaDB of the cluster's own, data under DIR). `--nodes 1 --no-accounting` is
the quick single-node mode. `--slurm` picks the release (default $RTOOL_TEST_SLURM, else 22.05,
Debian's; 24.11 is built from source once: releases.py); daemons and clients always come from
that release. `up` prints `export SLURM_CONF=DIR/slurm.conf` (and, for a built release, the
PATH with its clients first); every Slurm command must see them. Works as root without
systemd or cgroups (see shared/slurm-local.md).
Daemons are stopped by the pids in their pid files, never by name. Ports are picked free, so
clusters can coexist. The Cluster object (nodeops.py) also has bounded test helpers.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from devtools.localslurm import daemons, nodeops, releases, slurmbuild
from devtools.localslurm.daemons import LocalSlurmError, read_pid, sh, stop_pid, stop_pids, tail
from devtools.localslurm.nodeops import READY, Cluster
from devtools.localslurm.slurmconf import (
    MAX_NODES,
    MAX_SIMULATED,
    PREEMPTION,
    Layout,
    layout_partitions,
    system_program,
    write_slurm_conf,
)
from rtool.core.slurm.hostlist import compress_hostlist

__all__ = ["DEFAULT_DIR", "READY", "Cluster", "LocalSlurmError", "down", "main", "status", "up"]

DEFAULT_DIR = Path(os.environ.get("RTOOL_SLURM_DIR", "/tmp/rtool-slurm"))
PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
ACCOUNTING_PACKAGES = ["slurmdbd", "mariadb-server", "mariadb-client"]
BINARIES = ["slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo"]
ACCOUNTING_BINARIES = ["slurmdbd", "sacct", "sacctmgr", "mariadbd", "mariadb-install-db"]


def ensure_installed(release: releases.Release, accounting: bool = True) -> None:
    """Install Debian's packages when a program is missing (needs root); build a release
    from source when it is not built yet (once, cached: slurmbuild.py)."""
    slurm = BINARIES + (ACCOUNTING_BINARIES[:3] if accounting else [])
    system = ["munged"] + (ACCOUNTING_BINARIES[3:] if accounting else [])
    if release.source is not None and not release.built:
        print(f"building Slurm {release.source.version} once (a few minutes)", file=sys.stderr)
        try:
            slurmbuild.build(release)
        except (slurmbuild.BuildError, OSError) as exc:
            raise LocalSlurmError(f"cannot build Slurm {release.name}: {exc}") from None
    try:
        release.check_trusted()
    except releases.ReleaseError as exc:
        raise LocalSlurmError(str(exc)) from None
    missing = [b for b in system if not (shutil.which(b) or Path("/usr/sbin", b).exists())]
    for b in slurm if release.source is None else []:
        try:
            release.program(b)
        except releases.ReleaseError:
            missing.append(b)
    if not missing:
        return
    packages = PACKAGES + (ACCOUNTING_PACKAGES if accounting else [])
    if os.geteuid() != 0:
        raise LocalSlurmError(f"missing {', '.join(missing)}; install {' '.join(packages)} as root")
    print(f"installing {' '.join(packages)} (missing: {', '.join(missing)})", file=sys.stderr)
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    sh(["apt-get", "update", "-qq"], timeout=600, env=env)
    sh(["apt-get", "install", "-y", "-qq", *packages], timeout=900, env=env)


def ensure_munge() -> None:
    """Start munged unless a credential round-trip already works (it is shared: never stopped)."""
    if _munge_ok():
        return
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        sh(["mungekey", "--create"] if shutil.which("mungekey") else ["create-munge-key"])
    run_dir = Path("/run/munge")
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.chown(run_dir, "munge", "munge")
    sh([system_program("munged"), "--force"], check=False)
    if not daemons.wait_until(_munge_ok, 5, step=0.1):
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


def _up(cluster: Cluster) -> bool:
    """Its slurmctld runs, and the controller that answers is this cluster's own (its
    StateSaveLocation is ours)."""
    if not (cluster.conf.exists() and cluster.alive("slurmctld")):
        return False
    res = sh(["scontrol", "show", "config"], env=cluster.env, timeout=15, check=False)
    for line in res.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "StateSaveLocation":
            return value.strip() == str(cluster.dir / "state")
    return False


def ready(cluster: Cluster) -> bool:
    """Every node takes jobs, and sacct answers when the cluster has accounting."""
    if not (cluster.nodes and _up(cluster)):
        return False
    states = cluster.node_states()
    if any(states.get(n) not in READY for n in cluster.nodes):  # simulated ones: any state
        return False
    if not cluster.accounting:
        return True
    res = sh(["sacct", "-n", "-X", "-S", "now-1minutes"], env=cluster.env, timeout=15, check=False)
    return res.returncode == 0


def status(cluster: Cluster) -> str | None:
    """`n[1-2] idle, n3 drained; accounting on; Slurm 24.11` (nodes grouped by state, in
    Slurm's compressed form) or None when it is not up."""
    if not _up(cluster):
        return None
    states = cluster.node_states()
    by_state: dict[str, list[str]] = {}
    for n in cluster.nodes:
        by_state.setdefault(states.get(n, "unknown"), []).append(n)
    nodes = ", ".join(f"{compress_hostlist(ns)} {st}" for st, ns in by_state.items())
    if not cluster.accounting:
        acct = "accounting off"
    else:
        down_ones = [d for d in ("slurmdbd", "mariadbd") if not cluster.alive(d)]
        acct = "accounting on" if not down_ones else f"accounting DOWN ({', '.join(down_ones)})"
    return f"{nodes}; {acct}; Slurm {cluster.release.name}"


def up(
    directory: Path = DEFAULT_DIR,
    *,
    nodes: int = 3,
    accounting: bool = True,
    fast: bool = True,
    timeout: float = 120,
    extra: Sequence[str] = (),
    release: str | None = None,
    simulated: int = 0,
) -> Cluster:
    """Start (or reuse, when the same shape is up) the cluster in `directory`; wait until ready.
    `extra`: more slurm.conf lines (e.g. `ScronParameters=enable`); `release`: `22.05`,
    `24.11` (default $RTOOL_TEST_SLURM, else 22.05); `simulated`: more nodes in slurm.conf
    without a slurmd (slurmconf.MAX_SIMULATED)."""
    cluster = Cluster(Path(directory).resolve())
    try:
        rel = releases.get(release)
    except releases.ReleaseError as exc:
        raise LocalSlurmError(str(exc)) from None
    ensure_installed(rel, accounting)
    ensure_munge()
    have = cluster.layout
    shape = (nodes, simulated, accounting, list(extra), rel.name)
    if have and _shape(have) == shape and _current(cluster, have) and ready(cluster):
        return cluster
    problem = ""
    for _attempt in range(3):  # a port taken between picking and binding: new ports, again
        down(cluster.dir)
        cluster.dir.mkdir(parents=True, exist_ok=True)
        layout = Layout.new(nodes, accounting, fast, extra, rel.name, simulated)
        layout.save(cluster.dir)
        write_slurm_conf(cluster.dir, layout, rel.program("slurmd"))
        try:
            _start(cluster, layout, timeout / 3)
            if nodeops.wait_ready(cluster, timeout / 3, ready):
                return cluster
            problem = f"not ready in {timeout / 3:g}s: {status(cluster)}"
        except LocalSlurmError as exc:
            problem = str(exc)
    logs = sorted((cluster.dir / "log").glob("*.log"))
    down(cluster.dir)
    raise LocalSlurmError(f"local Slurm did not start: {problem}\n" + "".join(map(tail, logs)))


def _shape(layout: Layout) -> tuple[int, int, bool, list[str], str]:
    return len(layout.nodes), len(layout.simulated), layout.accounting, layout.extra, layout.release


def _current(cluster: Cluster, layout: Layout) -> bool:
    """The running cluster's slurm.conf has the partitions written today for its layout (a
    cluster started before the preemption partitions existed is started again)."""
    try:
        conf = cluster.conf.read_text().splitlines()
    except OSError:
        return False
    return all(line in conf for line in layout_partitions(layout))


def _start(cluster: Cluster, layout: Layout, timeout: float) -> None:
    if layout.accounting:
        daemons.start_database(cluster.dir, layout, timeout)
        daemons.start_slurmdbd(
            cluster.dir, layout, cluster.env, cluster.program("slurmdbd"), timeout
        )
    sh([cluster.program("slurmctld"), "-f", str(cluster.conf)], env=cluster.env)
    for name in layout.nodes:
        nodeops.start_slurmd(cluster, name)


def down(directory: Path = DEFAULT_DIR) -> None:
    """Stop what `up` started, by pid file: the slurmd's, slurmctld, slurmdbd, mariadbd.

    Job steps left on the nodes (slurmstepd and the job's processes, found by their step
    sockets in this cluster's spool folders) are killed with the nodes.
    """
    d = Path(directory).resolve()
    cluster = Cluster(d)
    nodeops.kill_nodes_processes(cluster, cluster.nodes)
    stop_pids([(read_pid(p), "slurmd") for p in sorted(d.glob("slurmd*.pid"))], grace=15)
    for daemon in ("slurmctld", "slurmdbd", "mariadbd"):
        stop_pid(read_pid(d / f"{daemon}.pid"), daemon, grace=15)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="local-slurm",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=["up", "down", "status"])
    p.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"default {DEFAULT_DIR}")
    p.add_argument(
        "--slurm",
        choices=list(releases.RELEASES),
        default=None,
        help=f"the Slurm release (default ${releases.ENV}, else {releases.DEFAULT})",
    )
    p.add_argument("--nodes", type=int, default=3, help="number of slurmd nodes n1..nN (3)")
    p.add_argument("--simulated", type=int, default=0, help="more nodes, without a slurmd (0)")
    p.add_argument(
        "--accounting",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="slurmdbd + MariaDB so that sacct answers (default on)",
    )
    p.add_argument(
        "--preempt",
        action="store_true",
        help="the preemptible partitions low, low0 and high (docs/local-slurm.md)",
    )
    p.add_argument(
        "--slow",
        action="store_true",
        help="default scheduler intervals (as on real clusters) instead of the fast test settings",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """`python -m devtools.localslurm up|down|status` (scripts/local-slurm)."""
    p = parser()
    args = p.parse_args(argv)
    if not 1 <= args.nodes <= MAX_NODES:
        p.error(f"--nodes must be between 1 and {MAX_NODES}")
    if not 0 <= args.simulated <= MAX_SIMULATED:
        p.error(f"--simulated must be between 0 and {MAX_SIMULATED}")
    try:
        if args.action == "up":
            start = time.monotonic()
            cluster = up(
                args.dir,
                nodes=args.nodes,
                accounting=args.accounting,
                fast=not args.slow,
                release=args.slurm,
                extra=PREEMPTION if args.preempt else (),
                simulated=args.simulated,
            )
            print(f"# up in {time.monotonic() - start:.1f}s: {status(cluster)}", file=sys.stderr)
            print(f"export SLURM_CONF={shlex.quote(str(cluster.conf))}")
            if cluster.release.prefix is not None:  # its clients before Debian's
                dirs = ":".join(shlex.quote(str(d)) for d in cluster.release.bindirs)
                print(f'export PATH={dirs}:"$PATH"')
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
