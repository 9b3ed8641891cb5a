"""A FUSE filesystem where looking up any file never answers (run as a separate process).

    python hung_getattr_fuse.py MOUNTPOINT

The root answers normally; `stat` of anything inside blocks forever, like a dead network mount
holding a run folder (and its switch files).
"""

from __future__ import annotations

import errno
import stat
import sys
import threading
import time
from typing import Any

from fuse import FUSE, FuseOSError, Operations


class HungLookup(Operations):
    def getattr(self, path: str, fh: Any = None) -> dict[str, Any]:
        if path != "/":
            threading.Event().wait()  # never answers
            raise FuseOSError(errno.ENOENT)
        now = time.time()
        return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2, "st_mtime": now, "st_ctime": now}

    def readdir(self, path: str, fh: Any) -> list[str]:
        return [".", ".."]


if __name__ == "__main__":
    FUSE(HungLookup(), sys.argv[1], foreground=True, nothreads=False, allow_other=False)
