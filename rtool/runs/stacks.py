"""Hang diagnosis across ranks (docs/guide/hangs.md): the stack dump each rank of a hung
launch wrote beside the abort file (`<abort file>.stacks-<rank>`, rtool.shim.hang), grouped by
the main thread's stack, in one line. A dump is read only from a file of yours (or root's) that
others cannot write, through the descriptor it was checked on, bounded; another launch's is
ignored.
"""

from __future__ import annotations

import glob
import itertools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rtool.core.safeio import UnsafeFileError, open_regular, trust_problem

#: One dump is at most this large; at most MAX_RANKS dumps are read.
MAX_BYTES = 256 * 1024
MAX_RANKS = 4096
_HEAD = re.compile(
    r"rtool-stacks rank=([0-9]{1,7}) host=(\S{1,255}) pid=[0-9]{1,10} launch=([0-9]{1,6})"
)
_THREAD = re.compile(r"(?:Current thread|Thread) 0x[0-9a-f]{1,16} \(most recent call first\):")
_FRAME = re.compile(r'  File "([^"\n]{1,4096})", line ([0-9]{1,9}) in (\S{1,512})')
#: Frames in these folders are libraries: the place is the innermost frame outside them. The
#: shim's own frames count too: a rank whose main thread writes the dump itself (its signal
#: handler, inside the collective) is where the handler interrupted it, not in `_dump_to`.
_SHIM = "/rtool/shim/"
_LIBRARY = ("site-packages", "dist-packages", "/lib/python3", _SHIM)

#: Decorators' frames: the name shown is the function they wrap (torch's c10d `wrapper`).
_WRAPPERS = frozenset({"wrapper", "inner", "wrapped", "_fn", "decorate_context", "_call_impl"})

Frame = tuple[str, int, str]  # (file, line, function), innermost first


@dataclass(frozen=True)
class RankStack:
    rank: int
    host: str
    frames: tuple[Frame, ...]  # the main thread's, innermost first
    launch: int = 0

    @property
    def own(self) -> tuple[Frame, ...]:
        """The frames without the shim's own innermost ones (a rank that wrote its dump from its
        handler groups with the ranks interrupted at the same place)."""
        return tuple(itertools.dropwhile(lambda f: _SHIM in f[0], self.frames))

    @property
    def where(self) -> str:
        """`all_reduce at train.py:212`: the function the innermost frame of the script
        called, and that frame's place (library frames skipped)."""
        if not self.frames:
            return "no Python frame"
        mine = next(
            (i for i, f in enumerate(self.frames) if not any(x in f[0] for x in _LIBRARY)),
            len(self.frames) - 1,
        )
        called = mine - 1 if mine > 0 else mine
        while called > 0 and self.frames[called][2] in _WRAPPERS:  # a decorator's frame
            called -= 1
        file, line, _ = self.frames[mine]
        return f"{self.frames[called][2]} at {os.path.basename(file)}:{line}"


def parse(text: str) -> RankStack | None:
    """One dump: its header and the main thread (the one whose outermost frame is
    `<module>`, else the first thread)."""
    lines = text.splitlines()
    head = _HEAD.fullmatch(lines[0]) if lines else None
    if head is None:
        return None
    threads: list[list[Frame]] = []
    for line in lines[1:]:
        if _THREAD.fullmatch(line.strip()):
            threads.append([])
        elif threads and (m := _FRAME.fullmatch(line.rstrip())):
            threads[-1].append((m.group(1), int(m.group(2)), m.group(3)))
    main = next((t for t in threads if t and t[-1][2] == "<module>"), threads[0] if threads else [])
    return RankStack(int(head.group(1)), head.group(2), tuple(main), int(head.group(3)))


def read_stacks(abort_file: str, launch: int) -> list[RankStack]:
    """The dumps of launch `launch` beside `abort_file`, by rank."""
    out = []
    for path in sorted(glob.glob(glob.escape(abort_file) + ".stacks-*"))[:MAX_RANKS]:
        text = _read_trusted(path)
        found = parse(text) if text is not None else None
        if found is not None and found.launch == launch:
            out.append(found)
    return sorted(out, key=lambda s: s.rank)


def _read_trusted(path: str) -> str | None:
    try:
        fd, st = open_regular(path, os.O_NOFOLLOW)
    except (OSError, UnsafeFileError):
        return None
    try:
        if trust_problem(path, st) is not None:
            return None
        return os.read(fd, MAX_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def summary(stacks: Sequence[RankStack], most: int = 4) -> str | None:
    """`15 ranks in all_reduce at train.py:212; rank 7 on gpu017 in DataLoader...`: the
    largest group by count, then every rank of the smaller groups (at most `most` named)."""
    if not stacks:
        return None
    groups: dict[tuple[Frame, ...], list[RankStack]] = {}
    for s in stacks:
        groups.setdefault(s.own, []).append(s)
    ordered = sorted(groups.values(), key=lambda g: (-len(g), g[0].rank))
    big = ordered[0]
    head = [f"{len(big)} ranks in {big[0].where}"] if len(big) > 1 else []
    odd = [s for g in ordered[1 if head else 0 :] for s in g]  # no group: every rank
    parts = [f"rank {s.rank} on {s.host} in {s.where}" for s in odd[:most]]
    if len(odd) > most:
        parts.append(f"{len(odd) - most} more ranks elsewhere")
    return "; ".join(head + parts)
