"""[nodes] config section (owned by the nodes package; an example: docs/nodes.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rtool.core.config.fields import setting
from rtool.core.config.types import Duration, Percent, Section
from rtool.nodes.preflight import registry
from rtool.nodes.preflight.base import NodeBase


class PreflightBase(Section):
    """The pre-flight's own keys; every check adds its settings (`registry.with_settings`)."""

    enabled: bool = setting(
        True, "Run it in every rendered training script that has something to check."
    )
    timeout: Duration = setting(60.0, "The whole pre-flight, all nodes.")
    check_timeout: Duration = setting(
        NodeBase.model_fields["timeout"].default, NodeBase.model_fields["timeout"].description or ""
    )
    max_requeues: int = setting(3, "Requeue away from a bad node at most this many times per job.")

    if TYPE_CHECKING:  # the checks' settings (`pf.gpus`, `pf.dirs` ...)

        def __getattr__(self, name: str) -> Any: ...


if TYPE_CHECKING:
    PreflightConfig = PreflightBase
else:
    PreflightConfig = registry.with_settings(PreflightBase, "PreflightConfig", registry.CHECKS)


class NodesConfig(Section):
    #: A suspect is forgotten this long after its last evidence.
    expiry: Duration = 24 * 3600.0
    #: Add suspects to a run's excluded nodes (submit, pending tasks).
    exclude: bool = True
    #: Never exclude more of the partition's nodes than this, and always leave at least
    #: min_left of them (plus what the job needs).
    max_excluded: Percent = 50.0
    min_left: int = 0
    preflight: PreflightConfig = PreflightConfig()
