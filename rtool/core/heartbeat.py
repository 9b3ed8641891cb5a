"""The training heartbeat: one typed record shared by its writer (rtool.shim) and its readers
(the log watchdog, the run view, status). Standard library only.

One JSON object, rewritten atomically by rank 0 of a training (docs/shim.md). The format only
grows: new keys are added and `version` goes up only when a key's meaning changes, readers
keeping every older one. `Heartbeat.from_json` ignores keys it does not know (a newer writer),
reads the first format's keys (`LEGACY_KEYS`) and refuses a known key with a value of the wrong
type with one `HeartbeatFormatError`.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import os
import stat
import types
import typing
from dataclasses import dataclass
from typing import Any

#: The format written today (1: the first format, read too).
HEARTBEAT_VERSION = 2
#: A heartbeat is small (< 2 KiB); readers refuse a file larger than this.
MAX_HEARTBEAT_BYTES = 64 * 1024
#: The most entries of a list in a heartbeat (step_recent, step_baseline).
MAX_SAMPLES = 256
#: Keys of the first format -> today's field.
LEGACY_KEYS = {
    "last_stop_reason": "stop_reason",
    "last_save_step": "last_saved_step",
    "save_seconds": "longest_save_seconds",
    "max_step_seconds": "longest_step_seconds",
}


class HeartbeatFormatError(ValueError):
    """A heartbeat file or record that cannot be read (one line, names the key)."""


class RunState(str, enum.Enum):
    """What the training process was doing when it last wrote."""

    STARTING = "starting"  # Guard made, no step yet (model loading)
    RUNNING = "running"
    SAVING = "saving"  # a save on the way out is running
    STOPPED = "stopped"  # stopped early (see stop_reason); a next attempt may resume
    FINISHED = "finished"  # training complete
    CRASHED = "crashed"  # an uncaught exception ended the process (see error)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ErrorInfo:
    """An uncaught exception: its type, message and the last line of its traceback."""

    type: str
    message: str = ""
    last_line: str = ""  # 'File "train.py", line 12, in main'

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


@dataclass(frozen=True)
class StepSample:
    """One agreement of the ranks (rtool.shim): the run's step time then (the slowest rank's,
    seconds), which rank was slowest, on which node, and its lag over the ranks' median."""

    seconds: float
    rank: int | None = None
    node: str | None = None
    lag: float | None = None

    @staticmethod
    def of(value: Any) -> StepSample:
        if not isinstance(value, dict) or "seconds" not in value:
            raise _wrong("step_recent", value, "an object with seconds")
        kinds = {"seconds": float, "rank": int, "node": str, "lag": float}
        known = {k: v for k, v in value.items() if k in kinds and v is not None}
        return StepSample(
            **{k: _convert(f"step_recent.{k}", v, kinds[k]) for k, v in known.items()}
        )

    @staticmethod
    def many(raw: Any) -> tuple[StepSample, ...]:
        """The samples of a stored list (a ledger's); () when it is not one."""
        try:
            return tuple(StepSample.of(x) for x in raw or ())
        except (HeartbeatFormatError, TypeError):
            return ()

    @staticmethod
    def floats(raw: Any) -> tuple[float, ...]:
        ok = isinstance(raw, (list, tuple))
        return tuple(float(x) for x in raw if isinstance(x, (int, float))) if ok else ()


@dataclass(frozen=True)
class Heartbeat:
    """One heartbeat. `time` is the last progress (a stale time while running = a hang)."""

    state: RunState
    time: float
    version: int = HEARTBEAT_VERSION
    rtool_version: str | None = None  # the rtool whose shim wrote it ("0.2.0"; None: before 0.2)
    run: str | None = None  # $RTOOL_RUN, default the job name
    job_id: str | None = None
    array_job_id: str | None = None
    array_task_id: str | None = None
    restart_count: int = 0
    host: str | None = None
    rank: int = 0
    world_size: int = 1
    pid: int | None = None
    started: float | None = None  # when this process's Guard was made
    launch: int = 0  # the in-place restart this process is (0: the attempt's first launch)
    first_step_time: float | None = None  # when this process's first step was seen
    step: int | None = None  # the last step seen
    step_at_start: int | None = None  # the first step of this process
    step_seconds: float | None = None  # recent step duration
    longest_step_seconds: float | None = None
    last_saved_step: int | None = None
    last_save_time: float | None = None
    last_save_seconds: float | None = None  # measured duration of the last save
    longest_save_seconds: float | None = None
    save_over_grace: str | None = None  # a preempted stop's save longer than the GraceTime
    nonfinite_count: int = 0
    stop_reason: str | None = None  # of the last stop (docs/shim.md); kept until this run stops
    stop_detail: str | None = None
    stop_step: int | None = None
    stop_time: float | None = None
    stop_job_id: str | None = None
    exit_code: int | None = None
    error: ErrorInfo | None = None
    resumed_from: str | None = None  # the checkpoint rtool.shim.latest_checkpoint chose
    checkpoint_folder: str | None = None  # the folder it looked in (absolute)
    set_aside: str | None = None  # what it set aside: "step_300 (incomplete: ...) -> ...; ..."
    code_version: str | None = None  # the script's git revision: "1a2b3c4d5e6f (dirty)"
    packages: str | None = None  # the imported distributions: "numpy==2.1.0 torch==2.13.0"
    inputs: str | None = None  # the files on its command line: "cfg.yaml sha256:0a1b2c3d4e5f"
    mlflow_run_id: str | None = None  # the MLflow run it logged to (the next launch resumes it)
    slowest_rank: int | None = None  # the rank with the longest step time at the last agreement
    slowest_node: str | None = None  # its node
    slowest_lag: float | None = None  # its step time over the ranks' median, minus 1 (0.2)
    slowest_seconds: float | None = None  # its step time (the run's pace) at the last agreement
    step_recent: tuple[StepSample, ...] = ()  # the last agreements of this process (bounded)
    step_baseline: tuple[float, ...] = ()  # the run's steady step times, evenly thinned (bounded)
    step_baseline_stride: int = 1  # one agreement in this many is in step_baseline
    stacks: str | None = None  # a hung launch's ranks, grouped (the end record's copy only)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self) | {"state": self.state.value}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: Any) -> Heartbeat:
        """The record in a decoded JSON object; unknown keys ignored, wrong types refused."""
        if not isinstance(data, dict):
            raise HeartbeatFormatError(f"heartbeat: not a JSON object ({type(data).__name__})")
        data = {LEGACY_KEYS.get(k, k): v for k, v in data.items() if k not in LEGACY_KEYS} | {
            LEGACY_KEYS[k]: v for k, v in data.items() if k in LEGACY_KEYS and v is not None
        }
        kwargs: dict[str, Any] = {}
        for name, kind in _field_types().items():
            if name in data and data[name] is not None:
                kwargs[name] = _convert(name, data[name], kind)
        for required in ("state", "time"):
            if required not in kwargs:
                raise HeartbeatFormatError(f"heartbeat: no {required!r}")
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str | bytes) -> Heartbeat:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise HeartbeatFormatError(f"heartbeat: not JSON: {exc}") from None
        return cls.from_dict(data)

    def replace(self, **changes: Any) -> Heartbeat:
        return dataclasses.replace(self, **changes)


def read_heartbeat(
    path: str | os.PathLike[str], max_bytes: int = MAX_HEARTBEAT_BYTES
) -> Heartbeat | None:
    """The heartbeat in `path`; None when there is none. Never follows a symlink, never blocks
    on a FIFO, reads at most `max_bytes`; a bad file raises HeartbeatFormatError."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise HeartbeatFormatError(f"heartbeat {os.fspath(path)}: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise HeartbeatFormatError(f"heartbeat {os.fspath(path)}: not a regular file")
        raw = os.read(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(raw) > max_bytes:
        raise HeartbeatFormatError(f"heartbeat {os.fspath(path)}: larger than {max_bytes} bytes")
    try:
        return Heartbeat.from_json(raw)
    except HeartbeatFormatError as exc:
        raise HeartbeatFormatError(f"{os.fspath(path)}: {exc}") from None


@functools.cache
def _field_types() -> dict[str, Any]:
    hints = typing.get_type_hints(Heartbeat)
    return {f.name: hints[f.name] for f in dataclasses.fields(Heartbeat)}


def _convert(name: str, value: Any, kind: Any) -> Any:
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        kind = next(a for a in typing.get_args(kind) if a is not type(None))
    if kind is RunState:
        try:
            return RunState(value)
        except ValueError:
            states = ", ".join(s.value for s in RunState)
            raise HeartbeatFormatError(
                f"heartbeat: state: {value!r} is not one of {states}"
            ) from None
    if kind is ErrorInfo:
        if not isinstance(value, dict) or "type" not in value:
            raise _wrong(name, value, "an object with a type")
        return ErrorInfo(
            **{k: str(_convert(f"error.{k}", value[k], str)) for k in value if k in _ERROR_KEYS}
        )
    if typing.get_origin(kind) is tuple:
        if not isinstance(value, list) or len(value) > MAX_SAMPLES:
            raise _wrong(name, value, f"a list of at most {MAX_SAMPLES}")
        item = typing.get_args(kind)[0]
        if item is StepSample:
            return tuple(StepSample.of(v) for v in value)
        return tuple(_convert(name, v, item) for v in value)
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind is str and isinstance(value, (str, int)) and not isinstance(value, bool):
        return str(value)  # job ids written as numbers by hand
    raise _wrong(name, value, {float: "a number", int: "a whole number", str: "a string"}[kind])


_ERROR_KEYS = ("type", "message", "last_line")


def _wrong(name: str, value: Any, what: str) -> HeartbeatFormatError:
    return HeartbeatFormatError(
        f"heartbeat: {name}: expected {what}, got {type(value).__name__} {value!r:.60}"
    )
