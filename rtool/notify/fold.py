"""Slurm-aware quieting, notify's half: fold an alert into the alert of its cause.

An alert names the causes it may follow from (`Alert.depends`: the nodes of its run,
slurmctld). When the same batch holds the alert of one of them (`node:n3`, `slurm:slurmctld`)
and that alert is not OK, the dependent alert is *folded* into it: its key state goes on (its
status, since when, how many bad results) but nothing is sent for it; the cause's alert, which
the sweep made (rtool/watchdogs/causes.py), names it. So one node going down is one
notification, however many jobs and watchdogs it touches.

Once the cause's alert went out, a folded key counts as told (in that alert, to its channels):
when the cause is OK again and the key is still bad, it does not alert anew (the cause's
resolved notice names what is still bad); it repeats after `repeat_interval`, changes status
and resolves like any key, its notices going where the cause's went. One OK again in the same
batch as its cause sends no resolved notice of its own: the cause's says it. While the cause's alert
has not gone out (a silence, `min_failures`), a folded key is not told either, and alerts on its
own once unfolded. Pure functions; `rtool/notify/engine.py` applies them.
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


def resolves_with(prev: KeyState, decision: Decision, ok: set[str]) -> bool:
    """A folded key that is OK again in the batch where its cause is OK again: its resolved
    notice is the cause's (held back; the cause's names what is still bad instead)."""
    if decision.kind != "resolved" or not prev.folded_into or prev.folded_into not in ok:
        return False
    decision.kind = None
    decision.reason = f"resolved with {prev.folded_into}"
    return True


def causes_first(alerts: list[Alert], into: dict[str, str]) -> list[int]:
    """The batch's indexes with the causes' alerts first (else in order)."""
    causes = set(into.values())
    return sorted(range(len(alerts)), key=lambda i: alerts[i].key not in causes)


def hold(
    prev: KeyState, new: KeyState, decision: Decision, into: str, cause: KeyState, now: float
) -> KeyState:
    """The key's state when its alert is folded into `into` (whose state is `cause`, already
    decided in this batch): what decide() would send is not sent. Once the cause's alert went
    out, the key counts as told (in the cause's alert, to its channels, in its incident): it
    repeats from now and sends its resolved notice there, but does not alert anew when the
    cause is OK again and it is still bad (the cause's resolved notice names it then)."""
    decision.reason = f"folded into {into}: {decision.reason}"
    if decision.kind not in HELD_KINDS:
        new.folded_into = into  # a fresh state of decide()'s: no copy needed
        return new
    decision.kind = None
    if cause.notified is not None:
        return replace(
            new,
            notified=new.status,
            last_sent=now,
            version=prev.version,
            incident=prev.incident or cause.incident,
            channels=sorted({*prev.channels, *cause.channels}),
            folded_into=into,
        )
    return replace(
        new,
        notified=prev.notified,
        last_sent=prev.last_sent,
        version=prev.version,
        folded_into=into,
    )
