"""The scrontab backend: the cron chain's tick as an entry of the user's Slurm crontab.

Where the admin enabled it (`ScronParameters=enable` in slurm.conf) and the `scrontab` client
is installed, `rtool cron install --backend scrontab` writes one block into the user's
scrontab (other lines are kept):

    # BEGIN rtool cron <key> (managed by `rtool cron install`; do not edit)
    #SCRON --job-name=rtool-cron-<key>
    #SCRON --chdir=<dir>
    #SCRON --output=<dir>/logs/scheduler.%j.log
    */15 * * * * '<venv>/bin/rtool' cron tick --dir '<dir>' --no-chain
    # END rtool cron <key>

Slurm then starts the tick at each slot (no self-resubmitting job: the tick queues nothing);
`rtool watch cron` still sees the pending cron job under the chain's name. Otherwise the
self-perpetuating jobs stay (`--backend jobs`); `auto` picks by asking the cluster.
"""

from __future__ import annotations

import enum
import os
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rtool.core.errors import RtoolError, UsageError
from rtool.core.slurm import Slurm, SlurmError
from rtool.cron import chain
from rtool.cron.config import CronConfig
from rtool.cron.slots import tick_period


class Backend(str, enum.Enum):
    SCRONTAB = "scrontab"
    JOBS = "jobs"
    AUTO = "auto"


@dataclass(frozen=True)
class Availability:
    usable: bool
    reason: str


def detect(slurm: Slurm) -> Availability:
    """Can this user keep a Slurm crontab here? Asks `scontrol show config`, then `scrontab -l`."""
    if shutil.which("scrontab") is None:
        return Availability(False, "the scrontab command is not installed")
    try:
        params = slurm.show_config().get("ScronParameters", "")
    except SlurmError as exc:
        return Availability(False, f"cannot read the cluster's config: {exc}")
    if "enable" not in params.lower():
        return Availability(False, "scrontab is disabled on this cluster (ScronParameters)")
    try:
        slurm.scrontab_text()
    except SlurmError as exc:
        return Availability(False, f"scrontab -l failed: {exc}")
    return Availability(True, "ScronParameters=enable and scrontab -l answers")


def cron_spec(cfg: CronConfig) -> str:
    """The crontab time fields of the tick period (UsageError when there are none)."""
    period = round(tick_period(cfg).length)
    if period % 60 == 0 and 60 <= period < 3600 and 3600 % period == 0:
        return "* * * * *" if period == 60 else f"*/{period // 60} * * * *"
    if period % 3600 == 0 and 3600 <= period < 86400 and 86400 % period == 0:
        return "0 * * * *" if period == 3600 else f"0 */{period // 3600} * * *"
    if period == 86400:
        hour, minute = (int(x) for x in cfg.daily_at.split(":"))
        return f"{minute} {hour} * * *"
    raise UsageError(
        f"a tick every {period}s cannot be a crontab line (use minutes dividing an hour or "
        "hours dividing a day), or use --backend jobs"
    )


def markers(key: str) -> tuple[str, str]:
    begin = f"# BEGIN rtool cron {key} (managed by `rtool cron install`; do not edit)"
    return begin, f"# END rtool cron {key}"


def block(
    cfg: CronConfig, root: Path, name: str, key: str, config_files: Sequence[Path] = ()
) -> str:
    """The scrontab lines of one cron folder: the command shell-quoted; each `#SCRON` option
    written as scrontab reads it (split at whitespace, no quoting: a value with whitespace is
    refused); a line break in any value is refused (it would add a line to the crontab)."""
    argv = [*chain.tick_argv(root, 0, config_files)[:-2], "--no-chain"]
    begin, end = markers(key)
    lines = [begin, scron_option("job-name", name), scron_option("chdir", str(root))]
    lines.append(scron_option("output", str(root / "logs" / "scheduler.%j.log")))
    lines += [scron_option(opt, value) for opt, value in chain.resources(cfg)]
    command = f"{cron_spec(cfg)} {_environment()}{shlex.join(argv)}"
    _one_line("the tick's command", command)
    lines += [command, end]
    return "\n".join(lines) + "\n"


def _one_line(what: str, value: str) -> None:
    if any(c in value for c in "\n\r\0"):
        raise UsageError(f"{what} holds a line break: it cannot be written to a scrontab line")


def scron_option(opt: str, value: str) -> str:
    """`#SCRON --opt=value`. scrontab (24.11, tried) splits these lines at whitespace and knows
    no quoting (`"--chdir=/a b"` is "Invalid option"), while `"`, `'`, `#`, `\\` and `,` pass
    as they are: a value with whitespace is refused, never cut in two."""
    _one_line(f"--{opt} ({value!r})", value)
    if any(c.isspace() for c in value):
        raise UsageError(
            f"--{opt} {value!r} holds whitespace: scrontab cannot take it in a #SCRON line"
            " (rename it, or use --backend jobs)"
        )
    return f"#SCRON --{opt}={value}"


#: Carried into the tick's command: a Slurm cron job starts with the user's login environment
#: only (sbatch, the jobs backend, exports the submitting one).
CARRIED = ("SLURM_CONF", "XDG_STATE_HOME", "RTOOL_CONFIG")


def _environment() -> str:
    return "".join(f"{k}={shlex.quote(os.environ[k])} " for k in CARRIED if os.environ.get(k))


def without(text: str, key: str) -> str:
    """`text` without this folder's block (other lines, comments and blocks kept)."""
    begin, end = markers(key)
    out, inside = [], False
    for line in text.splitlines():
        if line == begin:
            inside = True
        elif inside and line == end:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out).rstrip("\n") + ("\n" if out else "")


def install(slurm: Slurm, new_block: str, key: str, private: Path) -> None:
    """Put `new_block` in the user's scrontab in place of this folder's old one (`private`:
    a folder of the user's own, e.g. the state dir, for the file handed to scrontab)."""
    text = without(slurm.scrontab_text(), key).rstrip("\n")
    write(slurm, (text + "\n\n" if text.strip() else "") + new_block, private)


def remove(slurm: Slurm, key: str, private: Path) -> bool:
    """Take this folder's block out of the scrontab; False when there was none."""
    current = slurm.scrontab_text()
    begin, _ = markers(key)
    if begin not in current.splitlines():
        return False
    rest = without(current, key)
    if rest.strip():
        write(slurm, rest, private)
    else:
        slurm.scrontab_remove()
    return True


def write(slurm: Slurm, text: str, private: Path) -> None:
    """Install `text` as the user's scrontab through a mkstemp file in `private` (never a
    predictable name, never the shared $TMPDIR where another user could swap it)."""
    fd, tmp = tempfile.mkstemp(prefix=".rtool-scrontab-", suffix=".txt", dir=private)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        slurm.scrontab_install(tmp)
    except SlurmError as exc:
        raise RtoolError(f"scrontab refused the new crontab: {exc}") from None
    finally:
        os.unlink(tmp)
