"""The local cluster's layout (release, nodes, ports, accounting) and the config files written
from it.

Pure file writing, no daemons: `localslurm` starts them. Facts behind every key are in
shared/slurm-local.md (Debian 12, Slurm 22.05 and 24.11, root without systemd or cgroups); the
same files serve both releases.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

CLUSTER_NAME = "rtoollocal"
DEFAULT_RELEASE = "22.05"  # = releases.DEFAULT (cluster.json written before releases existed)
#: Placeholder GPUs per node (`Gres=gpu:8`): a job asking for GPUs (`--gpus-per-node 8`, as
#: the README's examples do) is scheduled as on a GPU cluster; nothing opens the devices.
FAKE_GPUS = 8
DB_NAME = "slurm_acct"
DB_USER = "slurm"
#: slurmd processes one host runs for a local cluster (about 5.5 MiB each: docs/local-slurm.md).
MAX_NODES = 256
#: Nodes defined in slurm.conf without a slurmd of their own (bench/scale.py's 1,000 nodes): each
#: has n1's port, so n1's slurmd answers slurmctld's pings and sinfo shows it idle; for queues
#: of held jobs only (a job started there would run on n1). See docs/local-slurm.md.
MAX_SIMULATED = 4096


@dataclass
class Layout:
    """What `up` started: saved as cluster.json in the cluster's folder."""

    nodes: list[str]
    accounting: bool
    fast: bool = True
    ctld_port: int = 0
    node_ports: dict[str, int] = field(default_factory=dict)
    dbd_port: int = 0
    db_port: int = 0
    #: Extra slurm.conf lines (e.g. `ScronParameters=enable`).
    extra: list[str] = field(default_factory=list)
    #: The Slurm release whose daemons run it (devtools/localslurm/releases.py).
    release: str = DEFAULT_RELEASE
    #: Nodes in slurm.conf with no slurmd (after `nodes`; see MAX_SIMULATED).
    simulated: list[str] = field(default_factory=list)

    def save(self, directory: Path) -> None:
        (directory / "cluster.json").write_text(json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def load(cls, directory: Path) -> Layout | None:
        try:
            raw = json.loads((directory / "cluster.json").read_text())
            return cls(**raw)
        except (OSError, ValueError, TypeError):
            return None

    @classmethod
    def new(
        cls,
        nodes: int,
        accounting: bool,
        fast: bool = True,
        extra: Sequence[str] = (),
        release: str = DEFAULT_RELEASE,
        simulated: int = 0,
    ) -> Layout:
        if not 1 <= nodes <= MAX_NODES or not 0 <= simulated <= MAX_SIMULATED:
            raise ValueError(f"--nodes must be 1..{MAX_NODES} (+ 0..{MAX_SIMULATED} simulated)")
        names = [f"n{i}" for i in range(1, nodes + 1)]
        ports = free_ports(nodes + 3)
        return cls(
            nodes=names,
            accounting=accounting,
            fast=fast,
            ctld_port=ports[0],
            dbd_port=ports[1],
            db_port=ports[2],
            node_ports=dict(zip(names, ports[3:], strict=True)),
            extra=list(extra),
            release=release,
            simulated=[f"n{i}" for i in range(nodes + 1, nodes + simulated + 1)],
        )

    @property
    def node_range(self) -> str:
        n = len(self.nodes) + len(self.simulated)
        return f"n[1-{n}]" if n > 1 else self.nodes[0]


def free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def system_program(name: str) -> str:
    """A program that is not Slurm's (munged, mariadbd): Debian's, by absolute path."""
    for d in ("/usr/sbin", "/usr/bin", "/usr/local/sbin"):
        if Path(d, name).exists():
            return str(Path(d, name))
    return name


def _resources(slurmd: str) -> tuple[str, int]:
    """(CPUs, RealMemory MB) of this host, from `slurmd -C`."""
    try:
        out = subprocess.run(
            [slurmd, "-C"], capture_output=True, text=True, timeout=20, check=False
        ).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        out = ""
    fields = dict(kv.split("=", 1) for kv in out.split() if "=" in kv)
    cpus = fields.get("CPUs", str(os.cpu_count() or 1))
    mem = int(fields.get("RealMemory", "2048"))
    return cpus, max(512, min(mem - 1024, int(mem * 0.9)))


def write_slurm_conf(directory: Path, layout: Layout, slurmd: str) -> Path:
    """slurm.conf for `layout`; `slurmd`: the release's slurmd (its -C gives CPUs, memory)."""
    d = directory
    for sub in ("state", "log"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    host = socket.gethostname()
    cpus, mem = _resources(slurmd)
    lines = _daemon_lines(d, layout, host)
    lines += _accounting_lines(layout)
    if layout.fast:
        lines.append("SchedulerParameters=bf_interval=1,sched_interval=2")
    lines += layout.extra
    lines += _node_lines(layout, host, cpus, mem)
    lines += layout_partitions(layout)
    conf = d / "slurm.conf"
    conf.write_text("\n".join(lines) + "\n")
    write_gres_conf(d, layout)
    return conf


def _daemon_lines(d: Path, layout: Layout, host: str) -> list[str]:
    """The cluster-wide keys: daemons, their files in `d`, plug-ins, limits."""
    return [
        f"ClusterName={CLUSTER_NAME}",
        f"SlurmctldHost={host}(127.0.0.1)",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"SlurmctldPort={layout.ctld_port}",
        # Job ids of their own: two clusters on this host (the releases' suites side by side)
        # would otherwise number their jobs alike, and a multi-node launch's rendezvous port
        # (15000 + job id % 15000) would be the other cluster's launch's at the same moment.
        f"FirstJobId={layout.ctld_port}",
        f"StateSaveLocation={d / 'state'}",
        f"SlurmdSpoolDir={d / 'spool-%n'}",
        f"SlurmctldPidFile={d / 'slurmctld.pid'}",
        f"SlurmdPidFile={d / 'slurmd-%n.pid'}",
        f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={d / 'log' / 'slurmd-%n.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SchedulerType=sched/backfill",
        "ReturnToService=2",
        "MpiDefault=none",
        "GresTypes=gpu",
        "KillWait=5",
        "MinJobAge=600",
        "MaxArraySize=10001",
        # bench/scale.py queues up to 100,000 jobs beside the tests' own (the default limit is
        # 10,000; each task of a pending array counts)
        "MaxJobCount=150000",
        # A requeued job waits cred_expire seconds before it may start again (default 120).
        "AuthInfo=cred_expire=10",
    ]


def _node_lines(layout: Layout, host: str, cpus: str, mem: int) -> list[str]:
    """One NodeName line per node: each real one on its own port; the simulated ones on n1's
    (its slurmd answers their pings), picked last by the scheduler (Weight)."""
    first = layout.node_ports[layout.nodes[0]]
    nodes = [(n, layout.node_ports[n], "") for n in layout.nodes]
    nodes += [(n, first, " Weight=1000") for n in layout.simulated]
    return [
        f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} CPUs={cpus} "
        f"RealMemory={mem} Gres=gpu:{FAKE_GPUS} State=UNKNOWN{weight}"
        for name, port, weight in nodes
    ]


#: Preemption (docs/local-slurm.md), given as `extra` lines (`local-slurm up --preempt`, the
#: tests' `preempt_cluster`): `high` jobs preempt `low`/`low0` ones (REQUEUE, grace 20 s and
#: Slurm's default 0); jobs of the default `debug` partition are never preempted. A cluster of its
#: own: with preemption on, Slurm no longer lets jobs share cores (OverSubscribe=FORCE), which
#: the other tests' concurrent jobs need.
PREEMPTION = ("PreemptType=preempt/partition_prio", "PreemptMode=REQUEUE", "JobRequeue=1")
PREEMPT_PARTITIONS = (
    ("low", "PriorityTier=1 PreemptMode=REQUEUE GraceTime=20"),
    ("low0", "PriorityTier=1 PreemptMode=REQUEUE GraceTime=0"),
    ("high", "PriorityTier=2 PreemptMode=OFF"),
)


def layout_partitions(layout: Layout) -> list[str]:
    """The partition lines slurm.conf gets for `layout` (preemptible ones when it asks)."""
    return partition_lines(layout.node_range, preempt=PREEMPTION[0] in layout.extra)


def partition_lines(nodes: str, preempt: bool = False) -> list[str]:
    """The partitions, all on `nodes`: `debug` (the default), and with `preempt` (the
    PREEMPTION keys are among the extra lines) the preemptible ones."""
    common = f"Nodes={nodes} MaxTime=INFINITE State=UP"
    if not preempt:
        return [f"PartitionName=debug {common} Default=YES OverSubscribe=FORCE:4"]
    return [
        f"PartitionName=debug {common} Default=YES OverSubscribe=FORCE:4 PriorityTier=1 "
        "PreemptMode=OFF",
        *(f"PartitionName={name} {common} {keys}" for name, keys in PREEMPT_PARTITIONS),
    ]


def _accounting_lines(layout: Layout) -> list[str]:
    if not layout.accounting:
        return ["JobAcctGatherType=jobacct_gather/none"]
    return [
        "JobAcctGatherType=jobacct_gather/linux",
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStorageHost=127.0.0.1",
        f"AccountingStoragePort={layout.dbd_port}",
    ]


def write_gres_conf(directory: Path, layout: Layout) -> None:
    """gres.conf beside slurm.conf: FAKE_GPUS placeholder devices per node, character devices
    numbered like /dev/nvidiaN (major 195; no driver behind them), or plain files when this
    process may not make devices (slurmd then logs that they are no devices, and counts them)."""
    for i in range(FAKE_GPUS):
        path = directory / f"fake-gpu{i}"
        if not os.path.lexists(path):
            try:
                os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(195, i))
            except OSError:
                path.touch(mode=0o600)
    files = f"{directory}/fake-gpu[0-{FAKE_GPUS - 1}]"
    (directory / "gres.conf").write_text(f"NodeName={layout.node_range} Name=gpu File={files}\n")


def db_password(directory: Path) -> str:
    """The database password of this cluster (made once, kept 0600 in the cluster's folder)."""
    path = directory / "db.secret"
    try:
        return path.read_text().strip()
    except OSError:
        pass
    secret = secrets.token_hex(16)
    _write_private(path, secret)
    return secret


def _write_private(path: Path, text: str) -> None:
    """A new file of mode 0600 (never through a symlink, never over an existing file)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")


def write_dbd_conf(directory: Path, layout: Layout) -> Path:
    """slurmdbd.conf next to slurm.conf (slurmdbd finds it there), mode 0600."""
    d = directory
    text = "\n".join(
        [
            "AuthType=auth/munge",
            f"DbdHost={socket.gethostname().split('.')[0]}",
            "DbdAddr=127.0.0.1",
            f"DbdPort={layout.dbd_port}",
            "SlurmUser=root",
            f"PidFile={d / 'slurmdbd.pid'}",
            f"LogFile={d / 'log' / 'slurmdbd.log'}",
            "StorageType=accounting_storage/mysql",
            "StorageHost=127.0.0.1",
            f"StoragePort={layout.db_port}",
            f"StorageUser={DB_USER}",
            f"StoragePass={db_password(d)}",
            f"StorageLoc={DB_NAME}",
        ]
    )
    path = d / "slurmdbd.conf"
    path.unlink(missing_ok=True)
    _write_private(path, text)
    return path
