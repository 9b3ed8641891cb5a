"""The explicit list of pre-flight checks, in the order they run. A new check is one module
(`rtool.nodes.preflight.base.Check`: NAME, Settings, applies(ctx), run(ctx)) and one line in
`LINES`: its settings become `[nodes.preflight]` keys, `rtool preflight` options and the
node-side flags, its docstring a row of docs/nodes.md, and `rtool submit` runs the
pre-flight whenever it applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import create_model

from rtool.core.config.types import Section
from rtool.core.registry import Registry
from rtool.nodes.preflight.base import Check, NodeBase

#: The checks, in the order they run: name -> the module that is the check.
LINES: dict[str, str] = {
    "gpus": "rtool.nodes.preflight.gpus",
    "ecc": "rtool.nodes.preflight.ecc",
    "dirs": "rtool.nodes.preflight.dirs",
    "command": "rtool.nodes.preflight.command",
}

CHECKS: Registry[Check] = Registry("pre-flight check", LINES)


def settings_of(checks: Mapping[str, Check]) -> tuple[type[Section], ...]:
    """The checks' settings; two checks may not declare the same key."""
    seen: dict[str, str] = {}
    out = []
    for name, check in checks.items():
        if check.Settings is None:
            continue
        for key in check.Settings.model_fields:
            if key in seen:
                raise ValueError(f"pre-flight checks {seen[key]} and {name} both declare {key!r}")
            seen[key] = name
        out.append(check.Settings)
    return tuple(out)


def with_settings(base: type[Section], name: str, checks: Mapping[str, Check]) -> type[Any]:
    """`base` plus every check's settings, in the order the checks run."""
    bases = settings_of(checks)
    # pydantic orders inherited fields from the last base to the first
    model: type[Any] = create_model(name, __base__=(*reversed(bases), base))
    return model


if TYPE_CHECKING:
    Settings = Section
    NodeContext = NodeBase
else:
    #: Every check's settings: the keys of `[nodes.preflight]` that reach the nodes.
    Settings = with_settings(Section, "PreflightSettings", CHECKS)
    #: What the checks of one node are asked to verify.
    NodeContext = with_settings(NodeBase, "NodeContext", CHECKS)


def applies(ctx: NodeBase, checks: Mapping[str, Check] | None = None) -> list[str]:
    """The names of the checks that have something to check in `ctx`."""
    return [name for name, check in (checks or CHECKS).items() if check.applies(ctx)]
