"""Slurm-aware quieting, notify's half: fold an alert into the alert of its cause.

An alert names the causes it may follow from (`Alert.depends`: the nodes of its run,
slurmctld). When the same batch holds the alert of one of them (`node:n3`, `slurm:slurmctld`)
and that alert is not OK, the dependent alert is *folded* into it: its key state goes on (its
status, since when, how many bad results) but nothing is sent for it; the cause's alert, which
the sweep made (rtool/watchdogs/causes.py), names it. So one node going down is one
notification, however many jobs and watchdogs it touches.

A folded key that was never notified stays so: once its cause is OK again (the node is back)
and it is still bad, it alerts as new, on its own. A resolved notice is never folded (an OK
alert depends on nothing). Pure functions; `rtool/notify/engine.py` applies them.
"""

from __future__ import annotations

from dataclasses import replace

from rtool.core.alert import Alert, Status
from rtool.notify.decide import Decision, KeyState

#: Decision kinds a fold holds back (a resolved notice always goes out).
HELD_KINDS = ("alert", "changed", "repeat")


def folded(alerts: list[Alert]) -> dict[str, str]:
    """key of each alert folded into a cause's alert -> that cause's key.

    A cause's alert is one in the batch, not OK, whose key is a cause's key; an alert is never
    folded into itself, nor is a cause's alert folded into another cause."""
    bad = {a.key for a in alerts if a.status is not Status.OK}
    causes = {c.key for a in alerts for c in a.depends} & bad
    out: dict[str, str] = {}
    for a in alerts:
        if a.status is Status.OK or a.key in causes:
            continue
        into = next((c.key for c in a.depends if c.key in causes and c.key != a.key), None)
        if into is not None:
            out[a.key] = into
    return out


def hold(prev: KeyState, new: KeyState, decision: Decision, into: str) -> KeyState:
    """The key's state when its alert is folded into `into`: what decide() would send is not
    sent, so the notification bookkeeping stays as it was; the observation is kept."""
    decision.reason = f"folded into {into}: {decision.reason}"
    if decision.kind not in HELD_KINDS:
        return replace(new, folded_into=into)
    decision.kind = None
    return replace(
        new,
        notified=prev.notified,
        last_sent=prev.last_sent,
        version=prev.version,
        folded_into=into,
    )
