"""What every pre-flight check sees and returns. A check is one module with `NAME`,
`applies(ctx)` and `run(ctx)`, listed in `rtool.nodes.preflight.registry.CHECKS`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class NodeContext:
    """What the checks on one node are asked to verify."""

    gpus: int | None = None  # GPUs requested per node (None: no GPU check)
    dirs: tuple[str, ...] = ()  # must be writable with `min_free` bytes free
    min_free: int = 0
    command: str | None = None  # the user's own check (bash -c), exit 0 = healthy
    timeout: float = 20.0  # each command (a hung nvidia-smi is killed after this)
    nvidia_smi: str = "nvidia-smi"


#: Bounds of what a check reports (a command may print anything, e.g. 20 MB on one line).
MAX_DETAIL = 300
MAX_OUTPUT = 2000


@dataclass(frozen=True)
class Outcome:
    check: str
    ok: bool
    detail: str  # one line: `7 GPUs visible, 8 requested` (at most MAX_DETAIL characters)
    output: str = ""  # what the probed command printed: its last MAX_OUTPUT characters

    def __post_init__(self) -> None:
        detail = " ".join(self.detail.split())
        if len(detail) > MAX_DETAIL:
            detail = detail[: MAX_DETAIL - 1] + "…"
        object.__setattr__(self, "detail", detail)
        object.__setattr__(self, "check", self.check[:64])
        if len(self.output) > MAX_OUTPUT:
            object.__setattr__(self, "output", "…" + self.output[-(MAX_OUTPUT - 1) :])


@dataclass
class NodeReport:
    node: str
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outcomes)

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    def summary(self) -> str:
        """`n2: gpus: 7 GPUs visible, 8 requested; ecc: GPU 3 ...` or `n1: ok (gpus, ecc)`."""
        if self.ok:
            names = ", ".join(o.check for o in self.outcomes) or "nothing to check"
            return f"{self.node}: ok ({names})"
        return f"{self.node}: " + "; ".join(f"{o.check}: {o.detail}" for o in self.failures)


class Check(Protocol):
    NAME: str

    def applies(self, ctx: NodeContext) -> bool: ...

    def run(self, ctx: NodeContext) -> Outcome: ...
