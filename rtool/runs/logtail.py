"""Bounded reads of files other programs write (training logs, the batch script's records).

Only regular files owned by the user (or root) and not writable by group or others are read
(a hostile neighbour must not be able to plant alert text); symlinks are not followed; at most
`limit` bytes from the end are read.
"""

from __future__ import annotations

import os
import stat

#: Default bytes read from the end of a log.
TAIL_BYTES = 64 * 1024
#: Lines of a log tail kept in an attempt and shown in alerts, and their width.
TAIL_LINES = 12
LINE_WIDTH = 200


class UntrustedFile(OSError):
    """A file rtool refuses to read (not a regular file, foreign owner, writable by others)."""


def read_tail(path: str, limit: int = TAIL_BYTES) -> str:
    """The last `limit` bytes of `path` (decoded leniently). Raises OSError/UntrustedFile."""
    return read_tail_cut(path, limit)[0]


def read_tail_cut(path: str, limit: int = TAIL_BYTES) -> tuple[str, int]:
    """(`read_tail`, the bytes before the part read: 0 when the whole file was read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UntrustedFile(f"{path} is not a regular file")
        if st.st_uid not in (os.getuid(), 0):
            raise UntrustedFile(f"{path} is owned by uid {st.st_uid}")
        if st.st_mode & 0o022:
            raise UntrustedFile(f"{path} is writable by group or others")
        start = max(0, st.st_size - limit)
        os.lseek(fd, start, os.SEEK_SET)
        data = os.read(fd, limit)
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="replace")
    if start > 0 and "\n" in text:
        text = text.split("\n", 1)[1]  # drop the partial first line
    return text, start


def tail_lines(text: str, n: int = TAIL_LINES, width: int = LINE_WIDTH) -> tuple[str, ...]:
    """The last `n` non-empty lines, each cut to `width` characters, control chars removed."""
    lines = [ln.rstrip() for ln in text.replace("\r", "\n").split("\n") if ln.strip()]
    out = []
    for ln in lines[-n:]:
        clean = "".join(c if c.isprintable() or c == "\t" else "?" for c in ln)
        out.append(clean if len(clean) <= width else clean[: width - 1] + "…")
    return tuple(out)
