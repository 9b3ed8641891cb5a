"""ecc: nvidia-smi shows no uncorrectable ECC error since the driver loaded, no pending page
retirement or row remapping (the GPU needs a reset) and no failed row remapping (the FIELDS
below; older drivers: the first three). Runs where `gpus` is asked.
"""

from __future__ import annotations

from rtool.core.gpu import SmiAnswer, is_na, query
from rtool.nodes.preflight.base import NodeBase, Outcome

NAME = "ecc"
Settings = None  # it checks the GPUs that the gpus check counts
FIELDS = [
    "index",
    "ecc.errors.uncorrected.volatile.total",
    "retired_pages.pending",
    "remapped_rows.pending",
    "remapped_rows.failure",
]
#: Older drivers and GPUs without row remapping: the fields every ECC GPU knows.
BASIC_FIELDS = FIELDS[:3]


def applies(ctx: NodeBase) -> bool:
    return bool(ctx.gpus)


def judge(answer: SmiAnswer, fields: list[str]) -> Outcome:
    """Pure: the verdict on `nvidia-smi --query-gpu=<fields>` (FIELDS or BASIC_FIELDS)."""
    if answer.error:
        return Outcome(NAME, False, answer.error, answer.output)
    bad = []
    for row in answer.rows:
        values = dict(zip(fields, row, strict=False))
        unc = values.get("ecc.errors.uncorrected.volatile.total", "")
        if not is_na(unc) and unc.isdigit() and int(unc) > 0:
            bad.append(f"GPU {row[0]} {unc} uncorrectable ECC error(s)")
        for key, text in (
            ("retired_pages.pending", "page retirement pending"),
            ("remapped_rows.pending", "row remapping pending"),
            ("remapped_rows.failure", "row remapping failed"),
        ):
            if values.get(key, "").strip().lower() == "yes":
                bad.append(f"GPU {row[0]} {text}")
    if bad:
        return Outcome(NAME, False, "; ".join(bad), answer.output)
    return Outcome(NAME, True, f"{len(answer.rows)} GPU(s) without uncorrectable errors")


def run(ctx: NodeBase) -> Outcome:
    answer = query(FIELDS, ctx.timeout, ctx.nvidia_smi)
    fields = FIELDS
    if answer.error and "valid field" in answer.output.lower():
        answer, fields = query(BASIC_FIELDS, ctx.timeout, ctx.nvidia_smi), BASIC_FIELDS
    return judge(answer, fields)
