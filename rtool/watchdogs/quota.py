"""Pure parsers of quota command output: `lfs quota`, `mmlsquota -Y` and a simple format.

All return a `Quota` in bytes and files (None where there is no limit):

- `lfs quota -u|-g|-p ... /fs`: KiB; a value ending in `*` is over its limit; `[...]` marks
  an inaccurate value (used as is); long filesystem names push the numbers to the next line.
- `mmlsquota -Y`: colon-separated with a `HEADER` row naming the fields; KiB; `blockInDoubt`
  and `filesInDoubt` count against the headroom (added to the usage).
- `simple`: `key=value` words, one or more lines: `used=BYTES limit=BYTES files=N
  files_limit=N` (sizes may be written `500GiB`). For any site script.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rtool.core.units import UnitError, parse_size

_DIGITS = re.compile(r"[0-9]{1,20}", re.ASCII)
_WORD = re.compile(r"\b(\w{1,64})=(\S+)", re.ASCII)


class QuotaParseError(ValueError):
    """Quota output that does not have the expected shape."""


@dataclass(frozen=True)
class Quota:
    used: int  # bytes
    limit: int | None  # bytes (hard limit, else soft)
    files: int | None = None
    files_limit: int | None = None
    over: bool = False  # the tool flagged a limit as exceeded
    inaccurate: bool = False


def _num(token: str) -> tuple[int, bool, bool]:
    """`1234`, `1234*`, `[1234]` -> (value, over, inaccurate)."""
    raw = token.strip("[]*")
    if not _DIGITS.fullmatch(raw):
        raise QuotaParseError(f"not a number in quota output: {token!r}")
    return int(raw), token.endswith("*"), token.startswith("[")


def _count(token: str) -> int:
    """A file count: ASCII digits only (full-width digits, signs and `nan` are refused)."""
    if not _DIGITS.fullmatch(token):
        raise ValueError(f"not a count: {token!r}")
    return int(token)


def _limit(*values: int) -> int | None:
    """The effective limit: the first non-zero of (hard, soft); 0 means none."""
    return next((v for v in values if v > 0), None)


def parse_lfs_quota(text: str) -> Quota:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    header = next(
        (i for i, ln in enumerate(lines) if ln.split()[:2] == ["Filesystem", "kbytes"]), None
    )
    if header is None:
        raise QuotaParseError("lfs quota output has no 'Filesystem kbytes' header")
    tokens: list[str] = []
    for ln in lines[header + 1 :]:
        tokens.extend(ln.split())
        if len(tokens) >= 9:
            break
    # filesystem, kbytes, quota, limit, grace, files, quota, limit, grace
    if len(tokens) < 9:
        raise QuotaParseError("lfs quota output has no complete data row")
    (kbytes, over_b, inacc_b), (files, over_f, inacc_f) = _num(tokens[1]), _num(tokens[5])
    bsoft, bhard, fsoft, fhard = (_num(tokens[i])[0] for i in (2, 3, 6, 7))
    limit = _limit(bhard, bsoft)
    return Quota(
        used=kbytes * 1024,
        limit=limit * 1024 if limit else None,
        files=files,
        files_limit=_limit(fhard, fsoft),
        over=over_b or over_f,
        inaccurate=inacc_b or inacc_f,
    )


def parse_mmlsquota(text: str) -> Quota:
    header: list[str] | None = None
    for line in text.splitlines():
        parts = line.strip().split(":")
        if len(parts) < 3:
            continue
        if parts[2] == "HEADER":
            header = parts
            continue
        if header is None:
            continue
        row = dict(zip(header, parts, strict=False))
        try:
            used = _count(row["blockUsage"]) + _count(row.get("blockInDoubt") or "0")
            limit = _limit(_count(row["blockLimit"]), _count(row["blockQuota"]))
            files = _count(row["filesUsage"]) + _count(row.get("filesInDoubt") or "0")
            files_limit = _limit(_count(row["filesLimit"]), _count(row["filesQuota"]))
        except (KeyError, ValueError) as exc:
            raise QuotaParseError(f"mmlsquota -Y row without a valid {exc}") from None
        return Quota(
            used=used * 1024,
            limit=limit * 1024 if limit else None,
            files=files,
            files_limit=files_limit,
            over=bool(limit and used >= limit) or bool(files_limit and files >= files_limit),
        )
    raise QuotaParseError("mmlsquota -Y output has no HEADER row and data row")


def parse_simple(text: str) -> Quota:
    values = dict(_WORD.findall(text))
    if "used" not in values:
        raise QuotaParseError(
            "quota output has no used=... (expected used= limit= files= files_limit=)"
        )
    try:
        used = parse_size(values["used"])
        limit = parse_size(values["limit"]) if "limit" in values else None
        files = _count(values["files"]) if "files" in values else None
        files_limit = _count(values["files_limit"]) if "files_limit" in values else None
    except (UnitError, ValueError) as exc:
        raise QuotaParseError(f"bad value in quota output: {exc}") from None
    return Quota(used=used, limit=limit or None, files=files, files_limit=files_limit or None)


def parse_quota(fmt: str, text: str) -> Quota:
    parsers = {"lfs": parse_lfs_quota, "mmlsquota": parse_mmlsquota, "simple": parse_simple}
    if fmt not in parsers:
        raise QuotaParseError(f"unknown quota format {fmt!r} (one of {', '.join(parsers)})")
    return parsers[fmt](text)
