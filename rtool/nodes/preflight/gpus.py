"""gpus: `nvidia-smi --query-gpu=index,pci.bus_id,name,uuid --format=csv,noheader` lists at
least the requested GPUs, none is reported lost ("Unable to determine the device handle"), and
every `CUDA_VISIBLE_DEVICES` entry is there."""

from __future__ import annotations

import os

from rtool.core.config.fields import setting
from rtool.core.config.types import Section
from rtool.core.gpu import SmiAnswer, query
from rtool.nodes.preflight.base import NodeBase, Outcome

NAME = "gpus"
FIELDS = ["index", "pci.bus_id", "name", "uuid"]


class Settings(Section):
    gpus: int | None = setting(
        None,
        "GPUs each node must show (rtool submit: the job's --gpus-per-node; set it where whole "
        "nodes are allocated without a GPU request).",
    )


def applies(ctx: NodeBase) -> bool:
    return bool(ctx.gpus)


def judge(answer: SmiAnswer, requested: int, visible_env: str | None) -> Outcome:
    """Pure: the verdict on `nvidia-smi --query-gpu=index,pci.bus_id,name,uuid` output."""
    if answer.error:
        return Outcome(NAME, False, answer.error, answer.output)
    found = len(answer.rows)
    wanted = [d.strip() for d in (visible_env or "").split(",") if d.strip()]
    if wanted and wanted != ["NoDevFiles"]:
        ids = {r[0] for r in answer.rows} | {r[3] for r in answer.rows}
        missing = [d for d in wanted if d not in ids]
        if missing:
            detail = f"CUDA_VISIBLE_DEVICES names GPU(s) {','.join(missing)} that nvidia-smi lacks"
            return Outcome(NAME, False, detail, answer.output)
        found = len(wanted)
    lost = [p for p in answer.problems if "unable to determine" in p.lower() or "lost" in p.lower()]
    if found < requested or lost:
        why = f"; {lost[0]}" if lost else ""
        return Outcome(
            NAME, False, f"{found} GPUs visible, {requested} requested{why}", answer.output
        )
    model = answer.rows[0][2] if answer.rows else "?"
    return Outcome(NAME, True, f"{found} GPUs visible ({model}), {requested} requested")


def run(ctx: NodeBase) -> Outcome:
    answer = query(FIELDS, ctx.timeout, ctx.nvidia_smi)
    return judge(answer, ctx.gpus or 0, os.environ.get("CUDA_VISIBLE_DEVICES"))
