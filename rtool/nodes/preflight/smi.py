"""Running `nvidia-smi --query-gpu=... --format=csv,noheader` (bounded) and reading its rows."""

from __future__ import annotations

from dataclasses import dataclass

from rtool.core.proc import ProcError, ProcNotFound, ProcTimeout, run


@dataclass(frozen=True)
class SmiAnswer:
    rows: list[list[str]]  # the CSV rows that have the asked number of fields
    problems: list[str]  # other non-empty lines (`Unable to determine the device handle...`)
    error: str | None = None  # nvidia-smi missing, timed out, or failed with nothing to read
    output: str = ""


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


def query(ctx_smi: str, fields: list[str], timeout: float) -> SmiAnswer:
    argv = [ctx_smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader"]
    try:
        res = run(argv, timeout=timeout, check=False)
    except ProcTimeout:
        return SmiAnswer([], [], f"nvidia-smi did not answer within {timeout:g}s (hung)")
    except ProcNotFound:
        return SmiAnswer([], [], "nvidia-smi not found on this node")
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
    return value.strip().strip("[]").upper() in ("N/A", "NOT SUPPORTED", "")
