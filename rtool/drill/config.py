"""[drill] config section (owned by the drill package): how long `rtool drill` waits."""

from __future__ import annotations

from rtool.core.config.fields import setting
from rtool.core.config.types import PositiveDuration, Section


class DrillConfig(Section):
    start_timeout: PositiveDuration = setting(
        600.0, "How long the drill waits for the training's first step before the signal."
    )
    resume_timeout: PositiveDuration = setting(
        600.0, "How long it waits for the next attempt's first step (longer on a busy queue)."
    )
    folder: str = setting(
        "rtool-drill",
        "Where rtool drill --submit makes the folder of its throw-away job (relative: to the "
        "current folder).",
    )
