"""The one subprocess wrapper. Every external command goes through `run`, always with a timeout."""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from rtool.core.errors import RtoolError

log = logging.getLogger(__name__)


class ProcError(RtoolError):
    """A command that could not start, exited non-zero or timed out."""

    def __init__(
        self, argv: Sequence[str], message: str, returncode: int | None = None, stderr: str = ""
    ) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        self.command = shlex.join(self.argv)
        detail = f": {stderr.strip().splitlines()[-1]}" if stderr.strip() else ""
        super().__init__(f"{self.command}: {message}{detail}")


class ProcTimeout(ProcError):
    """The command did not finish within its timeout (it was killed)."""

    def __init__(self, argv: Sequence[str], timeout: float) -> None:
        self.timeout = timeout
        super().__init__(argv, f"timed out after {timeout:g}s")


class ProcNotFound(ProcError):
    """The program does not exist on PATH."""


@dataclass(frozen=True)
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    check: bool = True,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    max_output: int | None = None,
) -> Result:
    """Run argv (never through a shell) and return its output.

    Raises ProcTimeout when it runs past `timeout` seconds (the whole process group is killed),
    ProcNotFound when the program is missing, ProcError on a non-zero exit when `check`.
    `max_output`: keep only the last that many bytes of stdout and of stderr (a command that
    prints gigabytes costs that much memory, and is read to its end within the timeout).
    """
    if timeout is None or timeout <= 0:
        raise ValueError("run() needs a positive timeout")
    argv = [str(a) for a in argv]
    log.debug("run: %s (timeout %gs)", shlex.join(argv), timeout)
    proc = _start(argv, input is not None, None if env is None else {**os.environ, **env}, cwd)
    try:
        if max_output is None:
            out, err = proc.communicate(input=input, timeout=timeout)
        else:
            out, err = _bounded_output(proc, timeout, max_output)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise ProcTimeout(argv, timeout) from None
    if check and proc.returncode != 0:
        raise ProcError(argv, f"exit code {proc.returncode}", proc.returncode, err)
    return Result(argv, proc.returncode, out, err)


def _start(
    argv: list[str], stdin: bool, env: dict[str, str] | None, cwd: str | None
) -> subprocess.Popen[str]:
    """The process, in a session of its own (its group is killed on a timeout)."""
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Slurm, quota tools and site scripts may print any bytes: decode, never raise.
            encoding="utf-8",
            errors="replace",
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise ProcNotFound(argv, "command not found") from exc
    except OSError as exc:
        raise ProcError(argv, f"cannot start: {exc}") from exc


def _bounded_output(proc: subprocess.Popen[str], timeout: float, limit: int) -> tuple[str, str]:
    """(stdout, stderr), each its last `limit` bytes, read to the end within `timeout`."""
    deadline = time.monotonic() + timeout
    tails: list[bytes] = [b"", b""]

    def drain(index: int, stream: IO[str] | None) -> None:
        if stream is None:
            return
        raw = stream.buffer  # type: ignore[attr-defined]
        while chunk := raw.read1(65536):
            tails[index] = (tails[index] + chunk)[-limit:]

    readers = [
        threading.Thread(target=drain, args=(i, s), daemon=True)
        for i, s in enumerate((proc.stdout, proc.stderr))
    ]
    for t in readers:
        t.start()
    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    for t in readers:
        t.join(max(0.0, deadline - time.monotonic()))
        if t.is_alive():  # a child of the command holds the pipe open: the command is done
            break
    return tuple(t.decode("utf-8", errors="replace") for t in tails)  # type: ignore[return-value]


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=2)
    except subprocess.TimeoutExpired:
        # A child stuck in an uninterruptible call: abandon it rather than hang.
        log.warning("process %d did not die after SIGKILL; abandoned", proc.pid)
