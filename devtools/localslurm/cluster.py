"""A local cluster's files: folder, layout, release, slurm.conf, pid files (no Slurm calls here)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from devtools.localslurm import releases
from devtools.localslurm.daemons import pid_alive, read_pid
from devtools.localslurm.slurmconf import Layout


@dataclass
class ClusterFiles:
    """Where a local cluster lives: its folder, layout, config, daemons' pid files."""

    dir: Path

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
