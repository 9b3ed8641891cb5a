"""Slurm's compressed host list, written: the inverse of `parse.expand_hostlist` (pure).

`compress_hostlist(["n1", "n2", "n3", "gpu01"])` is `n[1-3],gpu01`, exactly what
`scontrol show hostlist` prints (property-tested against it on both releases): order and
repeats are kept (`n3,n1,n2` -> `n[3,1-2]`), and so is zero padding (`n[09-10]`; `n1` and `n01`
stay apart). `sort=True` first drops repeats and sorts naturally, the form rtool writes for
sets of nodes. As in Slurm's hostlist.c, a name's numeric suffix is its trailing digits (at
most 18, beyond which it stands alone) and the rest its prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_DIGITS = "0123456789"
_CHUNK = re.compile(r"(\d+)", re.ASCII)
MAX_DIGITS = 18


@dataclass
class _Range:
    prefix: str
    lo: int
    hi: int
    width: int  # digits written (zero padding included); 0 for a name without a number
    single: bool  # a name without a numeric suffix

    def numbers(self) -> str:
        lo = f"{self.lo:0{self.width}d}"
        return lo if self.hi == self.lo else f"{lo}-{self.hi:0{self.width}d}"


def _range(name: str) -> _Range:
    prefix = name.rstrip(_DIGITS)  # linear: a 30,000-digit name costs one pass
    digits = name[len(prefix) :]
    if not digits or len(digits) > MAX_DIGITS:
        return _Range(name, 0, 0, 0, True)
    n = int(digits)
    return _Range(prefix, n, n, len(digits), False)


def _pad(num: int, width: int) -> int:
    return max(0, width - len(str(num)))


def _width_equiv(a: _Range, b: _Range) -> bool:
    """Slurm's `_width_equiv`: may `a` and `b` share a range (padding unchanged either way)?
    Adjusts the width of one of them when they may."""
    if a.width == b.width:
        return True
    apad, abpad = _pad(a.lo, a.width), _pad(a.lo, b.width)
    bpad, bapad = _pad(b.lo, b.width), _pad(b.lo, a.width)
    if apad != abpad and bpad != bapad:
        return False
    if apad != abpad:
        b.width = a.width
    else:
        a.width = b.width
    return True


def _joins(tail: _Range, r: _Range) -> bool:
    return (
        not tail.single
        and not r.single
        and tail.prefix == r.prefix
        and tail.hi == r.lo - 1
        and _width_equiv(tail, r)
    )


def _natural(name: str) -> tuple[tuple[object, ...], ...]:
    """A sort key: `n2` before `n10`, `gpu01` by its number, text before numbers. A number is
    compared by its digits (length without leading zeros, then the digits): never int(), so a
    name with 5,000 digits neither raises ValueError nor costs quadratic time."""
    parts = _CHUNK.split(name)
    return tuple(
        (0, p, 0, 0) if i % 2 == 0 else (1, len(p.lstrip("0")), p.lstrip("0"), len(p))
        for i, p in enumerate(parts)
    )


def sort_hosts(names: Iterable[str]) -> list[str]:
    """The names once each, in natural order (`n2` before `n10`)."""
    return sorted(set(names), key=_natural)


def compress_hostlist(names: Iterable[str], *, sort: bool = False) -> str:
    """Slurm's compressed form of `names` ("" for none); `sort`: once each, natural order."""
    ranges: list[_Range] = []
    for name in sort_hosts(names) if sort else names:
        r = _range(name)
        if ranges and _joins(ranges[-1], r):
            ranges[-1].hi = r.hi
        else:
            ranges.append(r)
    out: list[str] = []
    i = 0
    while i < len(ranges):
        head = ranges[i]
        j = i + 1
        if not head.single:
            while j < len(ranges) and not ranges[j].single and ranges[j].prefix == head.prefix:
                j += 1
        if head.single:
            out.append(head.prefix)
        elif j - i > 1 or head.hi > head.lo:
            out.append(f"{head.prefix}[{','.join(r.numbers() for r in ranges[i:j])}]")
        else:
            out.append(head.prefix + head.numbers())
        i = j
    return ",".join(out)
