"""The explicit list of pre-flight checks, in the order they run. A new check is one module
(with NAME, applies(ctx), run(ctx)) and one line here."""

from __future__ import annotations

from rtool.nodes.preflight import command, dirs, ecc, gpus
from rtool.nodes.preflight.base import Check

CHECKS: dict[str, Check] = {
    gpus.NAME: gpus,
    ecc.NAME: ecc,
    dirs.NAME: dirs,
    command.NAME: command,
}
