"""What a job's batch script says about its stop path (pure: a function of the script's text).

The drill reads the script the job really runs (`scontrol write batch_script ID -`): the
`#SBATCH --signal` Slurm will send before the time limit (22.05 and 24.11 show it nowhere
else), and, in a script rendered by `rtool submit`, what the rtool prelude exports for the shim
(heartbeat, auto-requeue and its bound, the requeue exit code, the deadline window) and whether
it forwards the signal to the training. A `--signal` given to sbatch on its command line is
not in the script: `rtool drill --signal` names it then.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from rtool.core.units import UnitError, parse_duration
from rtool.slurm_templates.batchfile import sbatch_option
from rtool.slurm_templates.specs import SignalSpec, SpecError, validate_signal

#: The exit code with which the shim asks for a requeue (rtool.shim.REQUEUE_EXIT_CODE).
REQUEUE_EXIT_CODE = 85
#: The shim's default deadline window: a deadline signal with more time left stops at once.
DEADLINE_WINDOW = 900.0
#: Launchers that stand between the batch shell and the training processes.
LAUNCHERS = ("torchrun", "mpirun", "mpiexec", "accelerate", "deepspeed", "horovodrun")
#: The rtool prelude's trap (rtool/slurm_templates/_rtool_prelude.j2).
RTOOL_FORWARD = "_rtool_forward"
_EXPORT = re.compile(r"^\s*export\s+(.*)$")


@dataclass(frozen=True)
class ScriptFacts:
    """The stop path as the batch script sets it up."""

    signal: SignalSpec | None = None  # the last `#SBATCH --signal` of the header
    signal_error: str | None = None  # a `--signal` line that is not a valid spec
    heartbeat: str | None = None  # RTOOL_HEARTBEAT
    records: str | None = None  # RTOOL_RUN_RECORDS
    auto_requeue: bool = False  # RTOOL_AUTO_REQUEUE=1: the script requeues on the exit code
    max_requeues: int | None = None  # RTOOL_MAX_REQUEUES
    requeue_exit_code: int = REQUEUE_EXIT_CODE  # RTOOL_REQUEUE_EXIT_CODE
    deadline_signals: tuple[str, ...] = ("USR1",)  # RTOOL_DEADLINE_SIGNALS
    deadline_window: float = DEADLINE_WINDOW  # RTOOL_DEADLINE_WINDOW
    rtool_template: bool = False  # rendered by rtool submit: its trap forwards the signal
    uses_srun: bool = False
    launcher: str | None = None  # the first known launcher the script names

    def is_deadline(self, signal: str) -> bool:
        """The shim trains on to the deadline on this signal (when the end is near)."""
        return signal in self.deadline_signals


def header_lines(text: str) -> list[str]:
    """The comment lines before the first command (where sbatch reads `#SBATCH`)."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("#!") and not out:
            continue
        if line.strip() and not line.lstrip().startswith("#"):
            break
        out.append(line)
    return out


def exports(text: str) -> dict[str, str]:
    """`export NAME=VALUE ...` assignments of RTOOL_* variables, the last one winning."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _EXPORT.match(line)
        if m is None or "RTOOL_" not in line:
            continue
        try:
            words = shlex.split(m.group(1), comments=True)
        except ValueError:
            continue
        for word in words:
            name, eq, value = word.partition("=")
            if eq and name.startswith("RTOOL_") and "$" not in value:
                out[name] = value
    return out


def _signal(header: list[str]) -> tuple[SignalSpec | None, str | None]:
    spec, error = None, None
    for line in header:
        got = sbatch_option(line)
        if got is None or got[0] != "signal" or not got[1]:
            continue
        try:
            spec, error = validate_signal(got[1]), None
        except SpecError as exc:
            spec, error = None, str(exc)
    return spec, error


def _int(text: str | None, default: int | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else default


def _window(text: str | None) -> float:
    if not text:
        return DEADLINE_WINDOW
    try:
        return float(parse_duration(text))
    except UnitError:
        return DEADLINE_WINDOW


def _deadline_signals(text: str | None) -> tuple[str, ...]:
    if text is None:
        return ("USR1",)
    if text.strip().lower() in ("", "off", "none"):
        return ()
    return tuple(w.strip().upper().removeprefix("SIG") for w in text.split(",") if w.strip())


def read_script(text: str) -> ScriptFacts:
    """The stop path a batch script sets up (any text: nothing raises)."""
    spec, error = _signal(header_lines(text))
    env = exports(text)
    body = [
        line.split("#", 1)[0] for line in text.splitlines() if not line.lstrip().startswith("#")
    ]
    words = {w for line in body for w in re.split(r"[\s;&|()'\"]+", line) if w}
    launcher = next((name for name in LAUNCHERS if name in words), None)
    return ScriptFacts(
        signal=spec,
        signal_error=error,
        heartbeat=env.get("RTOOL_HEARTBEAT") or None,
        records=env.get("RTOOL_RUN_RECORDS") or None,
        auto_requeue=env.get("RTOOL_AUTO_REQUEUE", "") not in ("", "0"),
        max_requeues=_int(env.get("RTOOL_MAX_REQUEUES"), None),
        requeue_exit_code=_int(env.get("RTOOL_REQUEUE_EXIT_CODE"), REQUEUE_EXIT_CODE)
        or REQUEUE_EXIT_CODE,
        deadline_signals=_deadline_signals(env.get("RTOOL_DEADLINE_SIGNALS")),
        deadline_window=_window(env.get("RTOOL_DEADLINE_WINDOW")),
        rtool_template=RTOOL_FORWARD in text,
        uses_srun="srun" in words,
        launcher=launcher,
    )
