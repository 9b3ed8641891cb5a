"""[submit] and [switches] config sections (owned by slurm_templates)."""

from __future__ import annotations

from rtool.config.types import Section


class SubmitConfig(Section):
    partition: str | None = None
    account: str | None = None
    time: str | None = None
    signal: str | None = "B:USR1@600"
    array: str | None = None
    requeue: bool = False
    extra_lines: list[str] = []
    template_dir: str | None = None


class SwitchesConfig(Section):
    kill: str | None = None
    save: str | None = None
