"""`rtool watch ... --dry-run`: look only; what the sweep would do and send, in words.

The sweep runs as usual on a look-only state dir and Slurm layer (rtool.core.state,
rtool.core.slurm.cmd); this lists the actions, the withheld Slurm commands, the notifications
(rtool.notify.engine.preview) and the files not written (docs/watchdogs.md). A new watchdog
gets it for free as long as its side effects go through `Action`s, the Slurm layer and the
state dir.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from rtool.notify.engine import preview
from rtool.watchdogs.base import CheckResult, Output

if TYPE_CHECKING:
    from rtool.core.state import StateDir
    from rtool.notify.config import NotifyConfig


def report(
    results: list[CheckResult],
    planned: list[str],
    slurm: Any,
    notify_cfg: NotifyConfig | None,
    state: StateDir,
    out: Output,
    now: float,
) -> list[str]:
    """The lines `--dry-run` prints after the status lines (also the JSON's `dry_run`)."""
    withheld = getattr(slurm, "withheld", None) or []
    lines = [*planned, *(f"would run: {shlex.join(argv)}" for argv in withheld)]
    if notify_cfg is not None:
        try:
            alerts = [r.to_alert(now) for r in results]
            lines += [w.line() for w in preview(alerts, notify_cfg, state, now)]
        except Exception as exc:  # the preview never fails the sweep
            lines.append(f"cannot tell which notifications would be sent: {exc}")
    else:
        lines.append("--no-notify: no notification considered")
    for flag, given in (("--tee", out.tee), ("--prom-textfile", out.prom_textfile)):
        if given is not None:
            lines.append(f"not written: {flag} {given}")
    if all(x.startswith(("not written", "--no-notify")) for x in lines):
        lines.insert(0, "nothing to do: no action, no command, no notification")
    return [*lines, "nothing was changed, run or sent"]
