# ruff: noqa: E501  (captured sacct lines are kept whole)
"""The sacct parser on captured Slurm 22.05 `sacct -P -n -D -X --format=SACCT_FORMAT` text."""

from __future__ import annotations

from datetime import datetime

import pytest

from rtool.core.slurm import ParseError, expand_hostlist, parse_sacct
from rtool.core.slurm.sacct import SACCT_FORMAT, sacct_argv

# Captured on the local 3-node cluster (times rewritten to one day), fields in SACCT_FORMAT order:
# JobID|JobIDRaw|State|ExitCode|NodeList|Submit|Start|End|ElapsedRaw|Partition|JobName
CAPTURED = """\
12_1|13|COMPLETED|0:0|n1|2026-11-23T14:00:00|2026-11-23T14:00:01|2026-11-23T14:00:31|30|debug|train
12_2|14|TIMEOUT|0:0|n[1-2]|2026-11-23T14:00:00|2026-11-23T14:00:32|2026-11-23T14:01:33|61|debug|train
12_3|15|RUNNING|0:0|n[2-3]|2026-11-23T14:00:00|2026-11-23T14:01:34|Unknown|20|debug|train
12_[4-6%1]|12|PENDING|0:0|None assigned|2026-11-23T14:00:00|Unknown|Unknown|0|debug|train
20|20|NODE_FAIL|0:0|n[1-3]|2026-11-23T14:02:00|2026-11-23T14:02:01|2026-11-23T14:02:40|39|debug|ddp|x
20|20|REQUEUED|0:0|n[2-3]|2026-11-23T14:02:41|2026-11-23T14:02:52|2026-11-23T14:03:00|8|debug|ddp|x
20|20|COMPLETED|0:0|n[2-3]|2026-11-23T14:03:11|2026-11-23T14:03:12|2026-11-23T14:03:40|28|debug|ddp|x
21|21|CANCELLED by 0|0:15|n1|2026-11-23T14:04:00|2026-11-23T14:04:01|2026-11-23T14:04:09|8|debug|sleepy
22|22|OUT_OF_MEMORY|0:125|n2|2026-11-23T14:05:00|2026-11-23T14:05:01|2026-11-23T14:05:03|2|debug|big
23|23|FAILED|1:0|n3|2026-11-23T14:06:00|2026-11-23T14:06:01|2026-11-23T14:06:02|1|debug|crash
24|24|CANCELLED by 1000|0:9|gpu[08-10],login01|2026-11-23T14:07:00|2026-11-23T14:07:01|2026-11-23T14:07:05|4|gpu|
25|25|CANCELLED by 0|0:0|None assigned|2026-11-23T14:08:00|None|2026-11-23T14:08:05|0|debug|never started
"""


def _local(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").astimezone().timestamp()


def test_array_tasks_and_pending_range() -> None:
    recs = parse_sacct(CAPTURED)
    assert len(recs) == 12
    done, timeout, running, pending = recs[:4]
    assert (done.job_id, done.job_id_raw, done.array_job_id, done.array_task_id) == (
        "12_1",
        "13",
        "12",
        1,
    )
    assert done.state == "COMPLETED" and done.exit_code == 0 and done.signal is None
    assert done.start == _local("2026-11-23T14:00:01") and done.elapsed_s == 30.0
    assert done.finished and not running.finished
    assert timeout.state == "TIMEOUT" and timeout.nodes == ("n1", "n2")
    assert running.end is None and running.nodes == ("n2", "n3")
    assert pending.array_job_id == "12" and pending.array_task_id is None
    assert pending.nodes == () and pending.start is None and pending.state == "PENDING"


def test_requeued_attempts_in_order() -> None:
    attempts = [r for r in parse_sacct(CAPTURED) if r.job_id == "20"]
    assert [a.state for a in attempts] == ["NODE_FAIL", "REQUEUED", "COMPLETED"]
    assert attempts[0].nodes == ("n1", "n2", "n3") and attempts[2].nodes == ("n2", "n3")
    assert all(a.array_job_id is None and a.array_task_id is None for a in attempts)
    assert attempts[0].name == "ddp|x"  # a '|' in the name stays in the name


def test_cancelled_oom_failed_signals() -> None:
    by_id = {r.job_id: r for r in parse_sacct(CAPTURED)}
    assert by_id["21"].state == "CANCELLED" and by_id["21"].signal == 15
    assert by_id["22"].state == "OUT_OF_MEMORY" and by_id["22"].signal == 125
    assert (by_id["23"].state, by_id["23"].exit_code, by_id["23"].signal) == ("FAILED", 1, None)
    assert by_id["24"].nodes == ("gpu08", "gpu09", "gpu10", "login01")
    assert by_id["24"].name == "" and by_id["24"].partition == "gpu"
    assert by_id["25"].start is None and by_id["25"].nodes == ()
    assert by_id["25"].name == "never started"


def test_bad_output_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_sacct("12|12|COMPLETED\n")
    with pytest.raises(ParseError):
        parse_sacct("x1|1|COMPLETED|0:0|n1|Unknown|Unknown|Unknown|0|debug|j\n")
    with pytest.raises(ParseError):
        parse_sacct("1|1|COMPLETED|zero|n1|Unknown|Unknown|Unknown|0|debug|j\n")
    assert parse_sacct("\n\n") == []


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("n[1-3],gpu01", ["n1", "n2", "n3", "gpu01"]),
        ("n[1,3-4]", ["n1", "n3", "n4"]),
        ("gpu[08-10]", ["gpu08", "gpu09", "gpu10"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("node-a,node-b", ["node-a", "node-b"]),
        ("None assigned", []),
        ("", []),
    ],
)
def test_expand_hostlist(text: str, hosts: list[str]) -> None:
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize("text", ["n[1-3", "n1-3]", "n[3-1]", "n[a-b]"])
def test_expand_hostlist_rejects(text: str) -> None:
    with pytest.raises(ParseError):
        expand_hostlist(text)


def test_sacct_argv_validates() -> None:
    argv = sacct_argv(job_ids=["12_3", "15"], names=["train"], since=0.0)
    assert argv[:5] == ["sacct", "-P", "-n", "-X", f"--format={SACCT_FORMAT}"]
    assert "-D" in argv and "--jobs=12_3,15" in argv and "--name=train" in argv
    assert any(a.startswith("--starttime=19") for a in argv)
    assert "-D" not in sacct_argv(all_attempts=False)
    for bad_id in ["-1", "12_", "1;rm", "12.batch", ""]:
        with pytest.raises(ValueError):
            sacct_argv(job_ids=[bad_id])
    for bad_name in ["-x", "a,b", "", "a\nb"]:
        with pytest.raises(ValueError):
            sacct_argv(names=[bad_name])
