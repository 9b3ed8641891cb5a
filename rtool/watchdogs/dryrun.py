"""`rtool watch ... --dry-run`: look only. What the sweep would do and send, in words.

The sweep runs as usual (every probe, every check, the same exit code) on a look-only state
dir (writes stay in memory: rtool.core.state) and a look-only Slurm layer (only commands that
read run: rtool.core.slurm.cmd). Then, instead of acting and alerting:

- each result's actions (hold, requeue, signal, py-spy dump) are described, not carried out;
- the Slurm commands a probe asked for (a suspect node added to a pending job's ExcNodeList)
  are listed, not run;
- the notifications notify would queue are listed with their channels (rtool.notify.engine.preview),
  and none is queued or sent;
- --tee and --prom-textfile are not written.

Every watchdog gets this from the runner: a new one needs nothing of its own, as long as its
side effects go through `Action`s, the Slurm layer and the state dir.
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
    lines = [*planned]
    for argv in getattr(slurm, "withheld", None) or []:
        lines.append(f"would run: {shlex.join(argv)}")
    if notify_cfg is not None:
        lines += _alerts(results, notify_cfg, state, now)
    else:
        lines.append("--no-notify: no notification considered")
    for flag, given in (("--tee", out.tee), ("--prom-textfile", out.prom_textfile)):
        if given is not None:
            lines.append(f"not written: {flag} {given}")
    if all(x.startswith(("not written", "--no-notify")) for x in lines):
        lines.insert(0, "nothing to do: no action, no command, no notification")
    return [*lines, "nothing was changed, run or sent"]


def _alerts(
    results: list[CheckResult], cfg: NotifyConfig, state: StateDir, now: float
) -> list[str]:
    try:
        return [w.line() for w in preview([r.to_alert(now) for r in results], cfg, state, now)]
    except Exception as exc:  # the preview never fails the sweep
        return [f"cannot tell which notifications would be sent: {exc}"]
