"""The sweep's half of Slurm-aware quieting: one result per down or drained node (or for
slurmctld not answering) that other results depend on, naming them; resolved by a later sweep
that checks what it explained. Node states are sinfo's as captured from Slurm 22.05."""

from __future__ import annotations

from pathlib import Path

from rtool.core.alert import Cause, Status
from rtool.core.slurm import SlurmError
from rtool.core.slurm.nodes import NodeState, parse_sinfo_nodes
from rtool.core.state import StateDir
from rtool.watchdogs.base import CheckResult, ProbeEnv
from rtool.watchdogs.causes import add_causes

SINFO = (Path(__file__).parents[1] / "core" / "captured" / "22.05" / "sinfo.txt").read_text()
N1, N3 = Cause.node("n1"), Cause.node("n3")


class Env(ProbeEnv):
    """The sweep's environment with sinfo's answer given (and counted)."""

    def __init__(self, state: StateDir, lines: list[NodeState], squeue: Exception | None = None):
        super().__init__(None, state)
        self.lines, self.asked, self._error = lines, 0, squeue

    def nodes(self) -> list[NodeState]:
        self.asked += 1
        return self.lines


def results() -> list[CheckResult]:
    return [
        CheckResult("log", "/r/hb.json", Status.CRITICAL, "/r/hb.json: not written", depends=(N3,)),
        CheckResult("run", "llm", Status.CRITICAL, "llm stalled", depends=(N1, N3)),
        CheckResult("job", "llm", Status.WARNING, "llm running on n3 drained", depends=(N3,)),
        CheckResult("job", "other", Status.WARNING, "other: held", depends=(N1,)),
        CheckResult("disk", "/scratch", Status.OK, "/scratch 12% used", depends=(N3,)),
    ]


def test_a_drained_node_gets_one_result_that_names_what_follows_from_it(tmp_path: Path) -> None:
    env = Env(StateDir(tmp_path), parse_sinfo_nodes(SINFO))
    out = add_causes(results(), env, env.state, 1000.0)
    [cause] = out[5:]
    assert env.asked == 1 and cause.key == "node:n3" and cause.status is Status.CRITICAL
    assert cause.line.startswith(
        "NODE CRITICAL - n3 drained (GPU 3 ECC errors): 3 alerts follow from it, folded in "
        "here: log:/r/hb.json (CRITICAL: /r/hb.json: not written); run:llm (CRITICAL: llm"
    )
    assert cause.fields["folded"] == "log:/r/hb.json, run:llm, job:llm"
    assert cause.to_alert(1000.0).depends == ()  # a cause depends on nothing
    # n1 is allocated, not bad: "other" stays on its own; an OK result is never a dependent


def test_the_cause_is_resolved_by_the_next_sweep_that_checks_what_it_explained(
    tmp_path: Path,
) -> None:
    state = StateDir(tmp_path)
    add_causes(results(), Env(state, parse_sinfo_nodes(SINFO)), state, 1000.0)
    back = parse_sinfo_nodes(SINFO.replace("drained", "idle"))
    unrelated = [CheckResult("disk", "/scratch", Status.OK, "fine")]
    assert add_causes(unrelated, Env(state, back), state, 1100.0) == unrelated  # not its sweep
    out = add_causes(results(), Env(state, back), state, 1200.0)
    [resolved] = [r for r in out if r.key == "node:n3"]
    assert resolved.status is Status.OK and resolved.summary == (
        "n3: no alert follows from it any more; still bad on their own: log:/r/hb.json "
        "(CRITICAL), run:llm (CRITICAL), job:llm (WARNING)"
    )
    assert add_causes(results()[:1], Env(state, back), state, 1300.0) == results()[:1]


def test_slurmctld_not_answering_is_one_unknown_result(tmp_path: Path) -> None:
    down = SlurmError(["squeue"], "timed out after 20s")
    env = Env(StateDir(tmp_path), [], squeue=down)
    ctl = (Cause.slurmctld(),)
    blind = [
        CheckResult("job", "llm", Status.UNKNOWN, "llm: squeue failed", depends=ctl),
        CheckResult("run", "llm", Status.UNKNOWN, "llm: squeue failed", depends=ctl),
    ]
    [cause] = add_causes(blind, env, env.state, 1000.0)[2:]
    assert cause.key == "slurm:slurmctld" and cause.status is Status.UNKNOWN
    assert cause.summary.startswith("slurmctld did not answer (squeue: timed out after 20s): 2")
    assert env.asked == 0  # no node is asked about
