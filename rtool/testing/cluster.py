"""A local cluster's files: folder, layout, slurm.conf, pid files (no Slurm calls here)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rtool.testing.daemons import pid_alive, read_pid
from rtool.testing.slurmconf import Layout


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
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def pid(self, daemon: str) -> int | None:
        """Pid of `slurmctld`, `slurmd-n1`, `slurmdbd`, `mariadbd` (`slurmd`: the first node)."""
        if daemon == "slurmd" and self.nodes:
            daemon = f"slurmd-{self.nodes[0]}"
        return read_pid(self.dir / f"{daemon}.pid")

    def alive(self, daemon: str) -> bool:
        return pid_alive(self.pid(daemon))
