"""The PyTorch NCCL flight recorder's dumps of a launch (docs/guide/hangs.md): with `rtool submit
--flight-recorder` torch writes them to `<abort file>.nccl-<launch>/nccl_trace_rank_<rank>`.

The folder is opened once without following a link and used only when it is yours (or root's)
and writable by nobody else; a dump is listed only when it is a regular file of yours or root's
that others cannot write. The dumps are pickles: rtool never opens them, let alone unpickles them.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from rtool.core.safeio import trust_problem

#: The file name torch's prefix ends with in rtool's folder (torch appends the rank).
PREFIX = "nccl_trace_rank_"
#: At most this many names of the folder are looked at.
MAX_ENTRIES = 4096
#: How the dumps are read (the module ships with torch; older releases: tools/flight_recorder).
READER = "python -m torch.distributed.flight_recorder.fr_trace"
_NAME = re.compile(re.escape(PREFIX) + r"([0-9]{1,7})")


@dataclass(frozen=True)
class Dump:
    rank: int
    size: int
    path: str


def folder_for(abort_file: str, launch: int) -> str:
    """The folder of launch `launch`'s dumps (the batch script's `_rtool_flight_recorder`)."""
    return f"{abort_file}.nccl-{launch}"


def collect(folder: str) -> list[Dump]:
    """The trusted dumps in `folder`, by rank; none when the folder is missing or untrusted."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(folder, flags)
    except OSError:
        return []
    out = []
    try:
        if trust_problem(folder, os.fstat(fd)) is not None:
            return []
        with os.scandir(fd) as entries:
            for entry in itertools.islice(entries, MAX_ENTRIES):
                m = _NAME.fullmatch(entry.name)
                if m is None:
                    continue
                st = os.stat(entry.name, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and trust_problem(entry.name, st) is None:
                    out.append(Dump(int(m.group(1)), st.st_size, os.path.join(folder, entry.name)))
    except OSError:
        return []
    finally:
        os.close(fd)
    return sorted(out, key=lambda d: d.rank)


def ranks_text(ranks: Sequence[int], most: int = 6) -> str:
    """`0-3, 5, 7-9`: runs of consecutive ranks (at most `most`, then `…`)."""
    runs: list[list[int]] = []
    for r in sorted(set(ranks)):
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    parts = [f"{a}-{b}" if b > a else str(a) for a, b in runs[:most]]
    return ", ".join(parts) + (", …" if len(runs) > most else "")


def describe(dumps: Sequence[Dump], folder: str, room: int = 500) -> str | None:
    """`NCCL flight recorder: 4 dumps in FOLDER (ranks 0-3); read them: ...`, the reading
    hint shortened (`<that folder>`) or left out when the line would be longer than `room`."""
    if not dumps:
        return None
    n = len(dumps)
    word = "rank" if n == 1 else "ranks"
    text = (
        f"NCCL flight recorder: {n} dump{'s' if n != 1 else ''} in {folder} "
        f"({word} {ranks_text([d.rank for d in dumps])})"
    )
    for hint in (f"; read them: {READER} {folder}", f"; read them: {READER} <that folder>", ""):
        if len(text) + len(hint) <= room:
            break
    return text + hint


def appended(text: str | None, abort_file: str | None, launch: int, room: int) -> str | None:
    """`text` (a hang's detail or grouped stacks) with the launch's dumps said after it, the
    whole at most `room` characters (`text` is clipped first); `text` alone when none."""
    if not abort_file:
        return text
    folder = folder_for(abort_file, launch)
    said = describe(collect(folder), folder, room - 2 - min(len(text or ""), room // 2))
    if said is None:
        return text
    if not text:
        return said[:room]
    keep = room - len(said) - 2
    if keep < 10:
        return said[:room]
    return f"{text if len(text) <= keep else text[: keep - 1] + '…'}; {said}"
