"""The local cluster (`Cluster`: its folder, layout, release, pid files) and its node and job
operations for tests and the demo, all bounded in time.

A faithful node failure: killing a node's slurmd alone is not a node death (its slurmstepd and
the job's processes keep running), so `fail_node` also kills that node's slurmstepd processes
(found by the step sockets they hold under the node's spool-<node>/ folder, or by their
environment while it is still readable: this cluster's SLURM_CONF and SLURMD_NODENAME) and
everything under them, then marks the node down with a reason (as slurmctld would after
missed pings).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

from devtools.localslurm import releases
from devtools.localslurm.daemons import (
    LocalSlurmError,
    pid_alive,
    pid_is,
    read_pid,
    sh,
    stop_pid,
    wait_until,
)
from devtools.localslurm.slurmconf import Layout
from rtool.core.slurm.nodes import SINFO_FORMAT, parse_sinfo_nodes
from rtool.core.slurm.parse import ParseError, parse_scontrol_show_job

_NODE = re.compile(r"[A-Za-z][\w-]*")
_JOB = re.compile(r"\d+(?:_\d+)?")


def _node(cluster: Cluster, name: str) -> str:
    if not _NODE.fullmatch(name) or name not in cluster.nodes:
        raise LocalSlurmError(f"no node {name!r} in this cluster (nodes: {cluster.nodes})")
    return name


def start_slurmd(cluster: Cluster, name: str) -> None:
    # SLURMD_NODENAME in slurmd's environment is inherited by its slurmstepd processes:
    # that is how fail_node finds them.
    env = {**cluster.env, "SLURMD_NODENAME": name}
    sh([cluster.program("slurmd"), "-N", name, "-f", str(cluster.conf)], env=env, timeout=30)


def node_states(cluster: Cluster) -> dict[str, str]:
    """{node: state as sinfo prints it (`idle`, `mixed`, `down*`, `drained`...)}; {} on error."""
    res = sh(["sinfo", "-N", "-h", "-o", SINFO_FORMAT], env=cluster.env, timeout=15, check=False)
    if res.returncode != 0:
        return {}
    try:
        return {n.name: n.state for n in parse_sinfo_nodes(res.stdout)}
    except ParseError:
        return {}


def _scontrol(cluster: Cluster, *args: str, check: bool = True) -> str:
    return sh(["scontrol", *args], env=cluster.env, timeout=20, check=check).stdout


#: Node states (as sinfo prints them) of a node that takes jobs.
READY = ("idle", "mixed", "allocated")


def _resume(cluster: Cluster, node: str, state: str) -> None:
    """Resume a node left down or drained (not one that does not answer: `down*`)."""
    if state.startswith(("down", "drain")) and not state.endswith("*"):
        _scontrol(cluster, "update", f"nodename={node}", "state=resume", check=False)


def wait_ready(cluster: Cluster, timeout: float, ready: Callable[[Cluster], bool]) -> bool:
    """Wait until `ready(cluster)`; nodes left down or drained by an earlier run are resumed, and
    a slurmd that could not bind its port (taken for a moment by an outgoing connection: seen
    with 256 slurmd and 1,000 nodes) is started again."""
    settled, deadline = time.monotonic() + 5, time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready(cluster):
            return True
        dead = [n for n in cluster.nodes if not cluster.alive(f"slurmd-{n}")]
        for node in dead[:8] if time.monotonic() > settled else []:  # pid files written
            start_slurmd(cluster, node)
        for node, state in node_states(cluster).items():
            _resume(cluster, node, state)
        if not cluster.alive("slurmctld"):
            return False
        time.sleep(0.5)
    return False


def _spool_socket_inodes(cluster: Cluster, names: Iterable[str]) -> dict[str, str]:
    """{socket inode: node} of the unix sockets the nodes' slurmstepd processes listen on
    (spool-<node>/), read once for all the nodes."""
    prefixes = {f"{cluster.dir / f'spool-{name}'}/": name for name in names}
    inodes = {}
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 8:
                    head = parts[7].rsplit("/", 1)[0] + "/"
                    if head in prefixes:
                        inodes[parts[6]] = prefixes[head]
    except OSError:
        pass
    return inodes


def _stepds(cluster: Cluster, names: Iterable[str]) -> list[psutil.Process]:
    """The nodes' slurmstepd processes: by their step socket under spool-<node>/ or, while
    slurmstepd has not yet overwritten it with its title, by their environment."""
    wanted = set(names)
    conf = str(cluster.conf)
    sockets = {f"socket:[{i}]" for i in _spool_socket_inodes(cluster, wanted)}
    found = []
    for proc in psutil.process_iter(["name"]):
        if proc.info["name"] != "slurmstepd":
            continue
        try:
            env = proc.environ()
            fds = {
                os.readlink(f"/proc/{proc.pid}/fd/{fd}")
                for fd in os.listdir(f"/proc/{proc.pid}/fd")
            }
        except (psutil.Error, OSError):
            continue
        mine = env.get("SLURM_CONF") == conf and env.get("SLURMD_NODENAME") in wanted
        if mine or fds & sockets:
            found.append(proc)
    return found


def kill_nodes_processes(cluster: Cluster, names: Iterable[str]) -> list[int]:
    """SIGKILL the nodes' slurmd, their slurmstepd processes and everything under them: one
    scan of the processes, one wait (64 nodes go down in about the time of one)."""
    names = list(names)
    victims: list[psutil.Process] = []
    for name in names:
        slurmd = cluster.pid(f"slurmd-{name}")
        if pid_is(slurmd, "slurmd"):
            with contextlib.suppress(psutil.Error):
                victims.append(psutil.Process(slurmd))
    for stepd in _stepds(cluster, names):
        victims.append(stepd)
        with contextlib.suppress(psutil.Error):
            victims.extend(stepd.children(recursive=True))
    killed = []
    for proc in victims:
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
            killed.append(proc.pid)
    psutil.wait_procs(victims, timeout=10)
    return killed


def fail_node(cluster: Cluster, name: str, reason: str = "rtool test: node failure") -> list[int]:
    """Kill node `name` like a power cut, then mark it down. Returns the pids killed."""
    _node(cluster, name)
    killed = kill_nodes_processes(cluster, [name])
    _scontrol(cluster, "update", f"nodename={name}", "state=down", f"reason={reason}")
    return killed


def revive_node(cluster: Cluster, name: str, timeout: float = 60) -> None:
    """Start the node's slurmd again and resume it; wait until it takes jobs."""
    _node(cluster, name)
    if not cluster.alive(f"slurmd-{name}"):
        start_slurmd(cluster, name)

    def back() -> bool:
        state = node_states(cluster).get(name, "")
        _resume(cluster, name, state)
        return state in READY

    if not wait_until(back, timeout, step=0.5):
        raise LocalSlurmError(f"node {name} not back in {timeout:g}s: {node_states(cluster)}")


def drain_node(
    cluster: Cluster, name: str, reason: str = "rtool test: drained", settle: float = 10
) -> None:
    """Drain the node; wait up to `settle` s for it to answer (24.11 marks a node resumed a
    moment before `drained*`, not responding, for about a second; a dead one stays so)."""
    _node(cluster, name)
    _scontrol(cluster, "update", f"nodename={name}", "state=drain", f"reason={reason}")
    wait_until(lambda: not node_states(cluster).get(name, "").endswith("*"), settle, step=0.3)


def job_state(cluster: Cluster, job_id: str) -> str | None:
    """JobState from `scontrol show job` (None when slurmctld no longer knows the job)."""
    if not _JOB.fullmatch(job_id):
        raise ValueError(f"not a Slurm job id: {job_id!r}")
    res = sh(["scontrol", "show", "job", job_id], env=cluster.env, timeout=20, check=False)
    records = parse_scontrol_show_job(res.stdout) if res.returncode == 0 else []
    return records[0].get("JobState") if records else None


def wait_job_state(
    cluster: Cluster, job_id: str, states: Iterable[str], timeout: float = 60
) -> str:
    """Poll until the job is in one of `states`; returns it, LocalSlurmError after `timeout`."""
    wanted = set(states)
    seen: list[str | None] = [None]

    def reached() -> bool:
        seen[0] = job_state(cluster, job_id)
        return seen[0] in wanted

    if not wait_until(reached, timeout, step=0.5):
        raise LocalSlurmError(f"job {job_id} not {sorted(wanted)} in {timeout:g}s: {seen[0]}")
    return str(seen[0])


def stop_controller(cluster: Cluster) -> None:
    stop_pid(cluster.pid("slurmctld"), "slurmctld")


def start_controller(cluster: Cluster, timeout: float = 60) -> None:
    """Start slurmctld again (it recovers its jobs from StateSaveLocation); wait for its ping."""
    if not cluster.alive("slurmctld"):
        sh([cluster.program("slurmctld"), "-f", str(cluster.conf)], env=cluster.env, timeout=30)

    def pings() -> bool:
        res = sh(["scontrol", "ping"], env=cluster.env, timeout=15, check=False)
        return res.returncode == 0 and "UP" in res.stdout

    if not wait_until(pings, timeout, step=0.5):
        raise LocalSlurmError(f"slurmctld did not answer in {timeout:g}s")


@dataclass
class Cluster:
    """A local cluster: its folder, layout, config, daemons' pid files (cluster.json, written by
    `control.up`), and the bounded test helpers above as methods."""

    dir: Path

    fail_node = fail_node
    revive_node = revive_node
    drain_node = drain_node
    node_states = node_states
    wait_job_state = wait_job_state
    stop_controller = stop_controller
    start_controller = start_controller

    @property
    def layout(self) -> Layout | None:
        return Layout.load(self.dir)

    @property
    def nodes(self) -> list[str]:
        layout = self.layout
        return layout.nodes if layout else []

    @property
    def accounting(self) -> bool:
        layout = self.layout
        return bool(layout and layout.accounting)

    @property
    def conf(self) -> Path:
        return self.dir / "slurm.conf"

    @property
    def release(self) -> releases.Release:
        """The Slurm release whose daemons run it (the one its clients must come from)."""
        layout = self.layout
        return releases.get(layout.release if layout else None)

    def program(self, name: str) -> str:
        """`slurmctld`, `scontrol`... of the cluster's release, by absolute path."""
        return self.release.program(name)

    @property
    def env(self) -> dict[str, str]:
        """For every Slurm command on it: its slurm.conf, its release's clients first on PATH,
        times in the standard format."""
        return {
            "SLURM_CONF": str(self.conf),
            "PATH": self.release.path_env(),
            "SLURM_TIME_FORMAT": "standard",
        }

    def pid(self, daemon: str) -> int | None:
        """Pid of `slurmctld`, `slurmd-n1`, `slurmdbd`, `mariadbd` (`slurmd`: the first node)."""
        if daemon == "slurmd" and self.nodes:
            daemon = f"slurmd-{self.nodes[0]}"
        return read_pid(self.dir / f"{daemon}.pid")

    def alive(self, daemon: str) -> bool:
        return pid_alive(self.pid(daemon))
