"""What every pre-flight check sees and returns (see `Check`).

`rtool.nodes.preflight.registry.NodeContext`, what the checks of one node are asked to verify,
is `NodeBase` plus every registered check's settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rtool.core.alert import clip
from rtool.core.config.fields import setting
from rtool.core.config.types import Duration, Section
from rtool.core.gpu import nvidia_smi


class NodeBase(Section):
    """What every check may use: the timeout of each command, the nvidia-smi to run."""

    timeout: Duration = setting(20.0, "Each command on a node (a hung nvidia-smi is killed).")
    nvidia_smi: str = setting(default_factory=nvidia_smi, help="The nvidia-smi to run.")

    if TYPE_CHECKING:  # the checks' settings (`ctx.gpus`, `ctx.dirs` ...)

        def __getattr__(self, name: str) -> Any: ...


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
        object.__setattr__(self, "detail", clip(" ".join(self.detail.split()), MAX_DETAIL))
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
    """A pre-flight check: one module and one line in `rtool.nodes.preflight.registry.LINES`.

    Its docstring's first paragraph, `NAME: passes when ...`, is its row in docs/nodes.md.
    `Settings` (a `Section` of `setting()` fields, or None) declares its `[nodes.preflight]`
    keys, which are also `rtool preflight`'s options and reach every node; a check reads
    them, and the other checks' ones, as `ctx.NAME`. `applies(ctx)` says whether there is
    anything to check (nothing asked: the pre-flight is left out of the batch script);
    `run(ctx)` checks, bounded by `ctx.timeout`, and never raises for a failed check.
    """

    NAME: str
    Settings: type[Section] | None

    def applies(self, ctx: NodeBase) -> bool: ...

    def run(self, ctx: NodeBase) -> Outcome: ...
