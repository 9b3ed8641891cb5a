"""The corrupt-checkpoint root cause, completed (docs/runs.md): the checkpoint the failed load
read and the last complete one in its folder, by the checkpoint watchdog's rules
(rtool/core/ckptscan.py judged by rtool/core/checkpoints.py). The folder is scanned by the
watchdog's child (`python -I -S ckptscan.py scan`, bounded by a timeout, walked by descriptor:
another user's folder or link on the way is refused), once per failed attempt; only your (or
root's) checkpoints older than the failed one count.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path, PurePosixPath

from rtool.core import ckptscan, proc
from rtool.core.checkpoints import Ckpt, judge, newest_complete
from rtool.core.identity import trusted_uid
from rtool.runs.signatures.base import Signature

NAME = "corrupt-checkpoint"
#: Seconds the scan may take (a hung filesystem leaves the signature as it was).
TIMEOUT = 10.0
#: The watchdog's default: smaller than this % of the complete one before is not complete.
MIN_SIZE = 50.0
_ASKED = "the last complete one (`rtool watch checkpoint` names it)"


def where(path: str) -> tuple[str, str] | None:
    """(folder, checkpoint name) of an absolute path a load read, else None."""
    p = PurePosixPath(path)
    if not p.is_absolute():
        return None
    for part in (p, *p.parents):
        if part.name and ckptscan.step_of(part.name) is not None:
            return str(part.parent), part.name
    return None


def scanned(folder: str) -> list[Ckpt] | None:
    """The folder's checkpoints as the watchdog's child scans them (None: not readable)."""
    req: dict[str, object] = {"path": folder, "pattern": None, "files": [], "marker": None}
    req |= {"detail": ckptscan.DETAIL_CAP, "settle": 0.0}
    argv = [sys.executable, "-I", "-S", ckptscan.__file__, "scan", json.dumps(req)]
    try:
        res = proc.run(argv, timeout=TIMEOUT, check=False, max_output=1 << 22)
        data = json.loads(res.stdout.rstrip().rsplit("\n", 1)[-1])
    except (OSError, ValueError, proc.ProcError):
        return None
    if not isinstance(data, dict) or not data.get("ok"):
        return None
    return [Ckpt.from_json(e) for e in data["entries"]]


def last_complete(folder: str, failed: str) -> str | None:
    """The newest complete checkpoint of `folder` older than `failed`, as a path ("": none;
    None: the folder could not be scanned)."""
    entries = scanned(folder)
    if entries is None:
        return None
    step = ckptscan.step_of(failed)
    judged = [
        j
        for j in judge(entries, 0.0, MIN_SIZE, time.time())
        if j.ckpt.name != failed
        and trusted_uid(j.ckpt.uid)
        and (step is None or j.ckpt.step is None or j.ckpt.step < step)
    ]
    found = newest_complete(judged)
    return os.fspath(Path(folder) / found.name) if found is not None else ""


def complete(
    sig: Signature | None, folder: str | None = None, resumed: str | None = None
) -> Signature | None:
    """`sig` with the last complete checkpoint named, when it is a corrupt checkpoint whose
    path the log gave, or that `rtool.shim.latest_checkpoint` chose (`resumed` in `folder`,
    from the attempt's heartbeat) when the log names none."""
    if sig is None or sig.name != NAME:
        return sig
    if not sig.checkpoint and folder and resumed and os.path.isabs(folder):
        sig = sig.reading(os.path.join(folder, resumed))
    if not sig.checkpoint:
        return sig
    found = where(sig.checkpoint)
    last = last_complete(*found) if found is not None else None
    if found is None or last is None:
        return sig
    if last:
        action = sig.action.replace(_ASKED, f"the last complete one, {last},")
    else:
        action = sig.action.replace(
            f"resume from {_ASKED}", f"no older checkpoint in {found[0]} is complete: start over"
        )
    return replace(sig, action=action, last_complete=last)
