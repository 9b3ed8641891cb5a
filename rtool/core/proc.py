"""The one subprocess wrapper. Every external command goes through `run`, always with a timeout."""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rtool.core.errors import RtoolError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0


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
) -> Result:
    """Run argv (never through a shell) and return its output.

    Raises ProcTimeout when it runs past `timeout` seconds (the whole process group is killed),
    ProcNotFound when the program is missing, ProcError on a non-zero exit when `check`.
    """
    if timeout is None or timeout <= 0:
        raise ValueError("run() needs a positive timeout")
    argv = [str(a) for a in argv]
    full_env = None if env is None else {**os.environ, **env}
    log.debug("run: %s (timeout %gs)", shlex.join(argv), timeout)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Slurm, quota tools and site scripts may print any bytes: decode, never raise.
            encoding="utf-8",
            errors="replace",
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise ProcNotFound(argv, "command not found") from exc
    except OSError as exc:
        raise ProcError(argv, f"cannot start: {exc}") from exc
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise ProcTimeout(argv, timeout) from None
    result = Result(argv, proc.returncode, out, err)
    if check and proc.returncode != 0:
        raise ProcError(argv, f"exit code {proc.returncode}", proc.returncode, err)
    return result


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=2)
    except subprocess.TimeoutExpired:
        # A child stuck in an uninterruptible call: abandon it rather than hang.
        log.warning("process %d did not die after SIGKILL; abandoned", proc.pid)
