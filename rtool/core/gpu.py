"""nvidia-smi, asked one way (`--query-gpu=FIELDS --format=csv,noheader[,nounits]`, bounded by
a timeout) and read in one place, for the pre-flight's gpus and ecc checks and the memory
watchdog. `RTOOL_NVIDIA_SMI` names another program to run (a test stand-in, a site wrapper).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rtool.core.proc import ProcError, ProcNotFound, ProcTimeout, run


@dataclass(frozen=True)
class SmiAnswer:
    rows: list[list[str]]  # the CSV rows that have the asked number of fields
    problems: list[str]  # other non-empty lines (`Unable to determine the device handle...`)
    error: str | None = None  # nvidia-smi missing, timed out, or failed with nothing to read
    output: str = ""
    missing: bool = False  # there is no nvidia-smi at all (no GPU driver on this node)


def nvidia_smi() -> str:
    """The program to run: $RTOOL_NVIDIA_SMI, else `nvidia-smi`."""
    return os.environ.get("RTOOL_NVIDIA_SMI") or "nvidia-smi"


def parse_csv(text: str, fields: int) -> tuple[list[list[str]], list[str]]:
    """Pure: rows of `--format=csv,noheader` output with `fields` fields, and other lines."""
    rows, problems = [], []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == fields and cells[0].isdigit():
            rows.append(cells)
        else:
            problems.append(line.strip())
    return rows, problems


def query(
    fields: list[str], timeout: float, smi: str | None = None, units: bool = True
) -> SmiAnswer:
    """Ask nvidia-smi for `fields` of every GPU (`units=False`: numbers without `MiB`)."""
    fmt = "--format=csv,noheader" + ("" if units else ",nounits")
    argv = [smi or nvidia_smi(), "--query-gpu=" + ",".join(fields), fmt]
    try:
        res = run(argv, timeout=timeout, check=False)
    except ProcTimeout:
        return SmiAnswer([], [], f"nvidia-smi did not answer within {timeout:g}s (hung)")
    except ProcNotFound:
        return SmiAnswer([], [], "nvidia-smi not found on this node", missing=True)
    except ProcError as exc:
        return SmiAnswer([], [], f"nvidia-smi could not run: {exc}")
    output = (res.stdout + res.stderr).strip()
    rows, problems = parse_csv(res.stdout, len(fields))
    problems += [ln.strip() for ln in res.stderr.splitlines() if ln.strip()]
    error = None
    if res.returncode != 0 and not rows:
        first = problems[0] if problems else "no output"
        error = f"nvidia-smi exit code {res.returncode}: {first}"
    return SmiAnswer(rows, problems, error, output)


def is_na(value: str) -> bool:
    """`[N/A]`, `N/A`, `[Not Supported]` or empty: nvidia-smi has no value for this field."""
    return value.strip().strip("[]").upper() in ("N/A", "NOT SUPPORTED", "")
