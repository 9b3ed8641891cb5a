# ruff: noqa: E501  (captured lines are kept whole)
"""Judging a NODE_FAIL attempt on what Slurm printed (captured on the local 64-node clusters,
Slurm 22.05 and 24.11, a 16-node attempt whose node n7 was killed): only the node Slurm recorded
as failed is blamed, whatever the nodes look like later."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rtool.core.slurm.nodes import parse_node_events, parse_sinfo_nodes
from rtool.core.slurm.sacct import parse_sacct, sacct_argv
from rtool.core.validate import ArgvError
from rtool.nodes.nodefail import Basis, Verdict, judge

# sacct -P -n -X -D --format=SACCT_FORMAT (22.05) / FAILED_NODE_FORMAT (24.11)
SACCT_2205 = "1|1|NODE_FAIL|0:0|n[1-16]|2026-11-25T20:57:33|2026-11-25T20:57:33|2026-11-25T20:57:40|7|debug|nf16\n"
SACCT_2411 = "1|1|NODE_FAIL|1:0|n[1-16]|2026-11-25T20:58:13|2026-11-25T20:58:13|2026-11-25T20:58:20|7|debug|n7|nf16\n"
# sacctmgr -n -P list events event=node nodes=n[1-16] start=... end=... format=EVENTS_FORMAT
EVENTS_2205 = "n7|DOWN|2026-11-25T20:57:40|Unknown|rtool test: GPU fell off\n"
EVENTS_2411 = "n7|DOWN|2026-11-25T20:58:20|Unknown|rtool test: GPU fell off\n"
# sinfo after n7 came back: every node idle (what the old code then blamed all 16 from)
IDLE = "".join(f"n{i}|debug*|idle|Unknown|Unknown|none\n" for i in range(1, 65))
# sinfo while n7 is still down (its reason time is when it went down)
N7_DOWN = IDLE.replace(
    "n7|debug*|idle|Unknown|Unknown|none", "n7|debug*|down*|2026-11-25T20:57:40|root|GPU fell off"
)
DRAIN_LATER = "n3|DRAIN|2026-11-25T20:57:38|Unknown|maintenance\nn5|DOWN|2026-11-25T20:58:30|Unknown|reboot\nn40|DOWN|2026-11-25T20:57:40|Unknown|other job's node\n"


@pytest.mark.parametrize(
    ("sacct", "events", "failed_node", "basis"),
    [
        (SACCT_2205, EVENTS_2205, False, Basis.EVENT),
        (SACCT_2411, EVENTS_2411, True, Basis.FAILED_NODE),
        (SACCT_2411, "", True, Basis.FAILED_NODE),  # events private: FailedNode alone
    ],
)
def test_a_16_node_attempt_blames_the_node_slurm_recorded(sacct, events, failed_node, basis):
    [r] = parse_sacct(sacct, failed_node)
    assert len(r.nodes) == 16 and r.state == "NODE_FAIL"
    v = judge(r, parse_node_events(events), parse_sinfo_nodes(IDLE))
    assert v.blamed == ("n7",) and v.basis is basis
    if events:
        assert v.reason == "rtool test: GPU fell off"


def test_nothing_named_blames_nobody_not_the_whole_attempt():
    [r] = parse_sacct(SACCT_2205)
    v = judge(r, [], parse_sinfo_nodes(IDLE))  # no events (PrivateData), n7 revived since
    assert v.blamed == () and v.basis is Basis.NONE
    v = judge(r, [], parse_sinfo_nodes(N7_DOWN))  # still down when first seen
    assert v.blamed == ("n7",) and v.basis is Basis.STATE and v.reason == "GPU fell off"


def test_a_drain_a_later_reboot_and_another_jobs_node_are_not_this_failure():
    [r] = parse_sacct(SACCT_2205)
    v = judge(r, parse_node_events(DRAIN_LATER + EVENTS_2205))
    assert v.blamed == ("n7",)
    assert judge(r, parse_node_events(DRAIN_LATER)).blamed == ()


def test_a_one_node_attempt_blames_its_node():
    line = "15|15|NODE_FAIL|0:0|n2|2026-11-25T19:39:36|2026-11-25T19:39:37|2026-11-25T19:39:38|1|debug|cap-nodefail\n"
    [r] = parse_sacct(line)
    v = judge(r)
    assert v.blamed == ("n2",) and v.basis is Basis.ONLY_NODE
    assert v.evidence("n2").detail == "attempt 15 ended NODE_FAIL on n2"


@given(
    blamed=st.lists(st.integers(1, 2000), max_size=20, unique=True),
    reason=st.none() | st.text(min_size=1, max_size=40),
)
def test_verdict_round_trip(blamed, reason):
    nodes = tuple(f"gpu{i:04d}" for i in range(1, 2001))
    v = Verdict(
        "run",
        "12_3",
        1.0e9,
        1.0e9 + 5,
        nodes,
        tuple(f"gpu{i:04d}" for i in blamed),
        Basis.EVENT,
        reason,
    )
    d = v.to_json()
    assert d["nodes"] == "gpu[0001-2000]"
    assert Verdict.from_json(d) == v
    assert Verdict.from_json({**d, "basis": "guess"}) is None


def test_sacct_argv_asks_for_node_fail_attempts_since_then():
    argv = sacct_argv(names=["a"], since=1.0e9, states=["NODE_FAIL"], failed_node=True)
    assert "--state=NODE_FAIL" in argv and "--endtime=now" in argv
    assert any(a.startswith("--format=") and ",FailedNode,JobName" in a for a in argv)
    with pytest.raises(ArgvError):
        sacct_argv(states=["NODE_FAIL,RUNNING"])
