"""A FUSE filesystem whose statfs never answers (run as a separate process).

    python hung_fuse.py MOUNTPOINT

getattr/readdir of the root answer normally; statfs blocks forever, like a dead network mount.
"""

from __future__ import annotations

import errno
import stat
import sys
import threading
import time
from typing import Any

from fuse import FUSE, FuseOSError, Operations


class HungStatfs(Operations):
    def getattr(self, path: str, fh: Any = None) -> dict[str, Any]:
        if path != "/":
            raise FuseOSError(errno.ENOENT)
        now = time.time()
        return {
            "st_mode": stat.S_IFDIR | 0o755,
            "st_nlink": 2,
            "st_ctime": now,
            "st_mtime": now,
            "st_atime": now,
        }

    def readdir(self, path: str, fh: Any) -> list[str]:
        return [".", ".."]

    def statfs(self, path: str) -> dict[str, Any]:
        threading.Event().wait()  # never answers
        return {}


if __name__ == "__main__":
    FUSE(HungStatfs(), sys.argv[1], foreground=True, nothreads=False, allow_other=False)
