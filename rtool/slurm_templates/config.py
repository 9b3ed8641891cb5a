"""[submit] and [switches] config sections (owned by slurm_templates); every key with an
example and what it does: docs/submit.md, "Config"."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pydantic import ValidationInfo, field_validator

from rtool.core.config.types import Section
from rtool.slurm_templates import specs


def _not_blank(value: object) -> object:
    """An empty string is a mistake, not "the default": leave the key out for that."""
    if isinstance(value, str) and not value.strip():
        raise ValueError("empty: leave the key out to use the default")
    return value


#: The `[submit]` keys checked beyond their type: each one's check, which returns the value kept.
_CHECKS: dict[str, Callable[[Any], Any]] = {
    "time": specs.validate_time,
    "signal": lambda v: specs.validate_signal(v).sbatch(),
    "array": specs.validate_array,
    "partition": lambda v: specs.validate_words(v, "value"),
    "account": lambda v: specs.validate_words(v, "value"),
    "max_requeues": lambda v: specs.validate_count(v, "max_requeues"),
    "restarts_in_place": lambda v: specs.validate_count(v, "restarts_in_place", 100),
    "hang_after": specs.validate_hang_after,
    "save_every": specs.validate_hang_after,
    "extra_lines": lambda v: [specs.check_text(line, "extra line") for line in v],
}


class SubmitConfig(Section):
    partition: str | None = None
    account: str | None = None
    time: str | None = None
    signal: str | None = "B:USR1@600"
    array: str | None = None
    requeue: bool = False
    launcher: str | None = None
    python: str = "python"
    #: rtool's own command in the batch script (pre-flight), as the compute nodes see it.
    #: Default: the `rtool` that runs `rtool submit` (rtool.core.selfcmd.rtool_argv).
    rtool: str | None = None
    max_requeues: int = 3
    restarts_in_place: int = 2
    #: auto: the loop's own rhythm (rtool/shim/hang.py); "off" turns it off.
    hang_after: str | None = "auto"
    #: The shim also saves this often (auto: saves take 1% of the time).
    save_every: str | None = None
    flight_recorder: bool = False
    extra_lines: list[str] = []
    template_dir: str | None = None

    _not_empty = field_validator(
        "partition", "account", "time", "signal", "array", "launcher", "python", "template_dir",
        mode="before",
    )(_not_blank)  # fmt: skip

    @field_validator(*_CHECKS)
    @classmethod
    def _check(cls, value: Any, info: ValidationInfo) -> Any:
        """The key's own check (`_CHECKS`); an unset value (None, "") stays as it is."""
        if value is None or value == "":
            return value
        return _CHECKS[str(info.field_name)](value)

    @field_validator("rtool")
    @classmethod
    def _rtool(cls, value: str | None) -> str | None:
        if not value:
            return None
        path = os.path.expanduser(specs.check_text(value, "rtool"))
        if not os.path.isabs(path):
            raise ValueError(
                f"{value!r}: the absolute path of the rtool command, e.g. "
                "/shared/venvs/rtool/bin/rtool"
            )
        return path


class SwitchesConfig(Section):
    kill: str | None = None
    save: str | None = None
    #: Allow group-writable switch folders (a shared project folder; created 2775, files 664).
    #: Off: such a folder is refused, since any member could plant a symlink there. Either
    #: way a switch file another member made is ignored (only yours or root's count).
    group_writable: bool = False

    _not_empty = field_validator("kill", "save", mode="before")(_not_blank)
