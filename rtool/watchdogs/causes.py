"""Slurm-aware quieting, the sweep's half (docs/notify.md, "Slurm-aware quieting").

After the checks: one `node:NAME` result per node that sinfo calls bad (the sweep's one sinfo
call) and that results not OK depend on (`CheckResult.depends`), and one `slurm:slurmctld`
result when the sweep's squeue failed; each names the results that follow from it, which notify
folds into it. A cause raised earlier (remembered in `watch/causes.json`) and not now is
resolved by the first sweep that checks one of the results it explained; sweeps that watch
other things leave it alone.
"""

from __future__ import annotations

import logging
from typing import Any

from rtool.core.alert import Cause, CauseKind, Status, worst
from rtool.core.proc import ProcError
from rtool.core.slurm.parse import ParseError
from rtool.core.state import StateDir
from rtool.watchdogs.base import CAUSES_FILE as STATE_FILE
from rtool.watchdogs.base import CheckResult, ProbeEnv

log = logging.getLogger(__name__)

#: Results named in a cause's summary; the rest are counted.
MAX_NAMED = 6


def add_causes(
    results: list[CheckResult], env: ProbeEnv, state: StateDir, now: float
) -> list[CheckResult]:
    """`results` followed by one result per cause now bad, and one OK result per cause of an
    earlier sweep that this sweep resolves."""
    raised = node_causes(results, env) + slurm_causes(results, env)
    if not raised and not (state.path / STATE_FILE).exists():
        return results
    try:
        with state.lock("watch-causes"):
            resolved = _remember(state, results, raised, now)
    except OSError as exc:  # the verdicts stand without the memory
        log.warning("cause memory not updated: %s", exc)
        resolved = []
    return results + raised + resolved


def _bad(results: list[CheckResult], kind: CauseKind) -> dict[str, list[CheckResult]]:
    """cause name -> the results not OK that depend on it."""
    out: dict[str, list[CheckResult]] = {}
    for r in results:
        if r.status is Status.OK:
            continue
        for c in r.depends:
            if c.kind is kind:
                out.setdefault(c.name, []).append(r)
    return out


def node_causes(results: list[CheckResult], env: ProbeEnv) -> list[CheckResult]:
    """One result per down or drained node that results not OK depend on."""
    wanted = _bad(results, CauseKind.NODE)
    if not wanted:
        return []
    try:
        lines = env.nodes()
    except (ProcError, ParseError) as exc:
        log.info("no node states for quieting: %s", exc)
        return []
    states = {n.name: n for n in reversed(lines)}  # a node's first line (of its partitions)
    out = []
    for name, deps in sorted(wanted.items()):
        node = states.get(name)
        if node is not None and node.is_bad:
            out.append(cause_result(Cause.node(name), node.describe(), deps, {"state": node.state}))
    return out


def slurm_causes(results: list[CheckResult], env: ProbeEnv) -> list[CheckResult]:
    """One `slurm:slurmctld` result when the sweep's squeue failed and results depend on it."""
    deps = _bad(results, CauseKind.SLURMCTLD).get("slurmctld")
    failure = env.squeue_failure()
    if not deps or not isinstance(failure, ProcError):
        return []
    text = f"slurmctld did not answer ({failure})"
    return [cause_result(Cause.slurmctld(), text, deps, {"error": str(failure)})]


def cause_result(
    cause: Cause, what: str, deps: list[CheckResult], fields: dict[str, str]
) -> CheckResult:
    """`n3 drained (GPU 3 ECC errors): 2 alerts follow from it, folded in here: ...`."""
    keys = list(dict.fromkeys(r.key for r in deps))
    named = [f"{r.key} ({r.status.name}: {_short(r.summary)})" for r in deps[:MAX_NAMED]]
    more = f" and {len(deps) - MAX_NAMED} more" if len(deps) > MAX_NAMED else ""
    many = "alert follows" if len(deps) == 1 else "alerts follow"
    summary = f"{what}: {len(deps)} {many} from it, folded in here: {'; '.join(named)}{more}"
    status = worst([Status.WARNING, *(r.status for r in deps)])
    if cause.kind is CauseKind.SLURMCTLD:
        status = worst([r.status for r in deps])  # blind, not broken: UNKNOWN stays UNKNOWN
    out_fields = {**fields, cause.kind.value: cause.name, "folded": ", ".join(keys)}
    return CheckResult(cause.kind.value, cause.name, status, summary, out_fields)


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _remember(
    state: StateDir, results: list[CheckResult], raised: list[CheckResult], now: float
) -> list[CheckResult]:
    """Update the remembered causes; OK results for those this sweep resolves."""
    data: Any = state.read_json(STATE_FILE, {})
    known: dict[str, Any] = data if isinstance(data, dict) else {}
    checked = {r.key for r in results}
    up = {r.key for r in raised}
    resolved = []
    for key, entry in sorted(known.items()):
        deps = entry.get("folded") if isinstance(entry, dict) else None
        if key in up or not isinstance(deps, list) or not checked & set(deps):
            continue
        kind, _, name = key.partition(":")
        still = [f"{r.key} ({r.status.name})" for r in results if r.key in deps and r.status]
        text = f"{name}: no alert follows from it any more"
        text += f"; still bad on their own: {', '.join(still)}" if still else ""
        resolved.append(CheckResult(kind, name, Status.OK, text, {"folded": ", ".join(deps)}))
    for r in resolved:
        known.pop(r.key, None)
    for r in raised:
        prev: dict[str, Any] = known[r.key] if isinstance(known.get(r.key), dict) else {}
        folded = [k for k in r.fields["folded"].split(", ") if k]
        before = [k for k in prev.get("folded", []) if isinstance(k, str)]
        known[r.key] = {"since": prev.get("since", now), "folded": sorted({*before, *folded})}
    if resolved or raised:
        state.write_json(STATE_FILE, known)
    return resolved
