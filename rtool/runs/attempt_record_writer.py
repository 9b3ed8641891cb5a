"""Write one attempt record (`rtool record start|end`, run by the batch script).

Nothing raw from a file reaches the line: ids, restart count and nodes come validated from
Slurm's environment (else left out), the time from this clock, the exit code (0-255) from the
batch script, and the end record's heartbeat copy only from a regular file of yours (no symlink,
no blocking, bounded), parsed, re-written with long texts clipped, and only when this attempt
wrote it. The records file is opened O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK (0600): a
planted symlink, a FIFO or device, another user's file or one others can write is refused; the
line is written with one `write`.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import socket
import stat
import time
from collections.abc import Callable, Mapping

from rtool.core.alert import clip
from rtool.core.errors import RtoolError
from rtool.core.heartbeat import (
    MAX_HEARTBEAT_BYTES,
    ErrorInfo,
    Heartbeat,
    HeartbeatFormatError,
    RunState,
)
from rtool.core.safeio import UnsafeFileError, open_regular
from rtool.core.slurm.parse import ParseError, expand_hostlist
from rtool.runs import flight, stacks
from rtool.runs.attempt_records import (
    DIGITS,
    HOSTLIST,
    NODE,
    BatchRecord,
    RecordError,
    belongs,
    records_path,
)

#: The stops of a hung launch: its own (no step for hang_after), or a rank's whose peer hung.
HUNG = ("hung", "peer_failed")
#: Texts of the heartbeat copy are clipped to this many characters.
TEXT_LIMIT = 300


class RecordWriteError(RtoolError):
    """The record could not be written (one line); the training goes on regardless."""


def _env_digits(env: Mapping[str, str], name: str) -> str | None:
    v = env.get(name, "").strip()
    return v if DIGITS.fullmatch(v) else None


def _expands(nodelist: str) -> bool:
    try:
        return bool(HOSTLIST.fullmatch(nodelist)) and bool(expand_hostlist(nodelist))
    except ParseError:
        return False


def from_env(event: str, env: Mapping[str, str], rc: int | None, now: float) -> BatchRecord:
    """The record of this attempt from Slurm's environment (bad values left out)."""
    job = _env_digits(env, "SLURM_JOB_ID")
    if job is None:
        raise RecordWriteError("SLURM_JOB_ID is not set (not inside a Slurm job)")
    node = env.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    nodelist = env.get("SLURM_JOB_NODELIST", "")
    array, task = _env_digits(env, "SLURM_ARRAY_JOB_ID"), _env_digits(env, "SLURM_ARRAY_TASK_ID")
    restart = _env_digits(env, "SLURM_RESTART_COUNT")
    return BatchRecord(
        event=event,
        job_id=job,
        array_job_id=array,
        array_task_id=int(task) if array and task is not None else None,
        restart=min(int(restart), 1_000_000) if restart else 0,
        node=node if NODE.fullmatch(node) else "",
        nodelist=nodelist if _expands(nodelist) else "",
        time=round(now, 3),
        rc=rc if event == "end" else None,
    )


def clipped(hb: Heartbeat) -> Heartbeat:
    """The heartbeat with every text field clipped to TEXT_LIMIT characters."""
    changes: dict[str, object] = {
        f.name: clip(value, TEXT_LIMIT)
        for f in dataclasses.fields(hb)
        if isinstance(value := getattr(hb, f.name), str) and not isinstance(value, RunState)
    }
    if (e := hb.error) is not None:
        texts = (clip(t, TEXT_LIMIT) for t in (e.type, e.message, e.last_line))
        changes["error"] = ErrorInfo(*texts)
    return hb.replace(**changes)


def read_own_heartbeat(path: str) -> Heartbeat | None:
    """The heartbeat at `path` when it is a regular file owned by you (never a symlink, a FIFO
    or another user's file), None otherwise."""
    try:
        fd, st = open_regular(path, os.O_NOFOLLOW)
    except (OSError, UnsafeFileError):
        return None
    try:
        if st.st_uid != os.getuid():
            return None
        raw = os.read(fd, MAX_HEARTBEAT_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) > MAX_HEARTBEAT_BYTES:
        return None
    try:
        return Heartbeat.from_json(raw)
    except (HeartbeatFormatError, RecursionError):
        return None


#: How long the end record waits for a training on its way out: with a preemption's GraceTime 0
#: Slurm's SIGTERM ends srun (and reaches the batch shell) at once while the training still
#: decides its stop or saves, and the record must carry the stop the training writes after it
#: (the batch script bounds the whole `rtool record` by 30 s).
SAVE_WAIT = 20.0


def _alive_here(hb: Heartbeat) -> bool:
    """The heartbeat's process is alive on this host."""
    if not hb.pid or hb.host != socket.gethostname():
        return False
    try:
        os.kill(hb.pid, 0)
    except ProcessLookupError:
        return False  # ended without its last word (killed)
    except OSError:
        pass  # alive, another user's pid: the wait is bounded
    return True


def _reread(
    path: str, hb: Heartbeat, wait: float, pending: Callable[[Heartbeat], bool]
) -> Heartbeat:
    """The heartbeat re-read every 0.2 s while `pending(it)`, at most `wait` s."""
    deadline = time.monotonic() + wait
    while pending(hb) and time.monotonic() < deadline:
        time.sleep(0.2)
        hb = read_own_heartbeat(path) or hb
    return hb


def line_for(
    rec: BatchRecord, heartbeat: str | None, abort: str | None = None, wait: float = SAVE_WAIT
) -> str:
    """The record's line, with this attempt's heartbeat at the end (when it is one; a save on
    the way out waited for, up to `wait` s); when the training hung, its `stacks`: the ranks'
    dumps beside the abort file `abort`, grouped."""
    return with_heartbeat(rec, ended(rec, heartbeat, wait), abort)


def ended(rec: BatchRecord, heartbeat: str | None, wait: float = SAVE_WAIT) -> Heartbeat | None:
    """For an end record, the heartbeat as the attempt ended (a save on the way out waited for)."""
    if rec.event != "end" or not heartbeat or (hb := read_own_heartbeat(heartbeat)) is None:
        return None
    return _reread(heartbeat, hb, wait, lambda h: h.state is RunState.SAVING)


def with_heartbeat(rec: BatchRecord, hb: Heartbeat | None, abort: str | None) -> str:
    if hb is not None and belongs(hb, rec):
        try:
            return dataclasses.replace(rec, heartbeat=clipped(hung_stacks(hb, abort))).to_line()
        except (RecordError, ValueError):
            pass  # too long or odd even clipped: the record without it
    return rec.to_line()


def last_word(
    rec: BatchRecord, heartbeat: str, first: Heartbeat | None, abort: str | None, wait: float
) -> str | None:
    """The end record again, when the first one copied a heartbeat of this attempt still
    `running` in a process alive on this host (srun ended before the training: GraceTime 0):
    once the training wrote its stop (after its save), within `wait` s; else None. Written after
    the first end record, so a batch shell killed while it waits still has its record; with the
    same `time`: the same end, the training's last word. Given up at once when the process is
    gone, or the heartbeat is another process's or attempt's (this one outlived its batch
    shell)."""
    if first is None or first.state is not RunState.RUNNING or not belongs(first, rec):
        return None

    def same(hb: Heartbeat) -> bool:
        return hb.pid == first.pid and belongs(hb, rec)

    def on_its_way(hb: Heartbeat) -> bool:
        alive = hb.state is RunState.SAVING or _alive_here(hb)
        return same(hb) and hb.state in (RunState.RUNNING, RunState.SAVING) and alive

    hb = _reread(heartbeat, first, wait, on_its_way)
    done = same(hb) and hb.state not in (RunState.RUNNING, RunState.SAVING)
    return with_heartbeat(rec, hb, abort) if done else None


def hung_stacks(hb: Heartbeat, abort: str | None) -> Heartbeat:
    """The heartbeat with `stacks` (rtool.runs.stacks) when its launch hung or ended with a peer
    that did: what the alerts say of a hang not restarted in place. The launch's NCCL flight
    recorder dumps (rtool.runs.flight) are said after it, whatever ended it (unless it finished)."""
    if not abort or hb.state is RunState.FINISHED:
        return hb
    where = None
    if hb.state is RunState.STOPPED and hb.stop_reason in HUNG:
        where = stacks.summary(stacks.read_stacks(abort, hb.launch))
    where = flight.appended(where, abort, hb.launch, TEXT_LIMIT)  # NCCL's dumps, a timeout's too
    return hb.replace(stacks=where) if where else hb


def append_line(path: str, line: str) -> None:
    """Append `line` and a newline to the records file in one write (see the module doc)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
    try:
        fd = os.open(path, flags | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RecordWriteError(f"{path} is a symlink; refusing to follow it") from None
        if exc.errno == errno.ENXIO:
            raise RecordWriteError(f"{path} is a FIFO with no reader; refused") from None
        raise RecordWriteError(f"cannot open {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RecordWriteError(f"{path} is not a regular file; refused")
        if st.st_uid != os.getuid():
            raise RecordWriteError(f"{path} is owned by uid {st.st_uid}, not by you; refused")
        if stat.S_IMODE(st.st_mode) & 0o022:
            raise RecordWriteError(f"{path} is writable by group or others; refused")
        data = (line + "\n").encode("ascii")
        if os.write(fd, data) != len(data):
            raise RecordWriteError(f"short write to {path}")
    except OSError as exc:
        raise RecordWriteError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def write(
    event: str, rc: int | None, env: Mapping[str, str] | None = None, now: float | None = None
) -> str | None:
    """Append this attempt's `event` record; the path written, or None when the job keeps no
    records (no RTOOL_RUN_RECORDS and no RTOOL_HEARTBEAT). Raises RecordWriteError."""
    env = os.environ if env is None else env
    heartbeat = env.get("RTOOL_HEARTBEAT") or None
    path = records_path(heartbeat, env.get("RTOOL_RUN_RECORDS") or None)
    if not path:
        return None
    rec = from_env(event, env, rc, time.time() if now is None else now)
    abort = env.get("RTOOL_ABORT_FILE") or None
    hb = ended(rec, heartbeat)
    append_line(path, with_heartbeat(rec, hb, abort))
    if heartbeat and (again := last_word(rec, heartbeat, hb, abort, SAVE_WAIT)):
        append_line(path, again)
    return path
