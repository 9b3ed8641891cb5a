"""The pure parsers on text captured from real Slurm 22.05 and 24.11 clusters (tests/core/
captured/<release>/, written by `python -m tests.core.captured.capture`): states, reasons, array
ids, times, exit codes, `scontrol show job/node`, sinfo and sacct. Where the releases differ, the
test says how (docs/slurm-releases.md)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from rtool.core.slurm.nodes import (
    exclusion_applied,
    parse_sinfo_nodes,
    pending_records,
    pending_unavailable,
    waits_for_nodes,
)
from rtool.core.slurm.parse import (
    ParseError,
    SqueueJob,
    parse_scontrol_record,
    parse_scontrol_show_job,
    parse_slurm_timestamp,
    parse_squeue,
)
from rtool.core.slurm.sacct import SacctRecord, parse_sacct
from rtool.nodes.nodefail import Basis, judge
from rtool.shim.slurm import parse_end_time

CAPTURED = Path(__file__).parent / "captured"
RELEASES = ["22.05", "24.11"]
DAY = 86400.0


def text(release: str, name: str) -> str:
    return (CAPTURED / release / name).read_text()


def squeue(release: str) -> dict[str, SqueueJob]:
    """name -> job (the array's records under `cap-array` (running) and `cap-array[]`)."""
    out = {}
    for j in parse_squeue(text(release, "squeue.txt")):
        out[j.name + ("[]" if j.pending_tasks else "")] = j
    return out


def sacct(release: str) -> dict[str, list[SacctRecord]]:
    out: dict[str, list[SacctRecord]] = {}
    for r in parse_sacct(text(release, "sacct.txt")):
        out.setdefault(r.name, []).append(r)
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_captured_from_the_release_it_is_filed_under(release: str) -> None:
    assert text(release, "VERSION").split()[-1].startswith(f"{release}.")


@pytest.mark.parametrize("release", RELEASES)
def test_squeue_states_reasons_array_ids_and_limits(release: str) -> None:
    jobs = squeue(release)
    run, nolimit = jobs["cap-run"], jobs["cap-nolimit"]
    assert (run.state, run.reason, run.time_limit) == ("RUNNING", None, 600.0)
    assert run.start_time is not None and run.submit_time is not None
    # a running job without --time shows 365 days on both (pending: UNLIMITED)
    assert nolimit.time_limit == 365 * DAY
    assert jobs["cap-held"].time_limit is None and jobs["cap-held"].reason == "JobHeldUser"
    assert jobs["cap-dep"].reason == "Dependency"
    begin = jobs["cap-begin"]
    assert begin.reason == "BeginTime" and begin.start_time and begin.submit_time
    assert begin.start_time.timestamp() - begin.submit_time.timestamp() == pytest.approx(3600, 5)
    task, rest = jobs["cap-array"], jobs["cap-array[]"]
    assert task.job_id == f"{task.array_job_id}_1" and task.array_task == "1"
    assert rest.job_id == f"{task.array_job_id}_[2-3%1]" and rest.pending_tasks == "2-3%1"
    assert rest.reason == "JobArrayTaskLimit" and rest.state == "PENDING"


@pytest.mark.parametrize("release", RELEASES)
def test_pending_on_a_drained_node_comes_from_scontrol_and_sinfo_not_the_reason(
    release: str,
) -> None:
    reason = squeue(release)["cap-drained"].reason
    said = {"22.05": "UnavailableNodes:n3", "24.11": "May be reserved for other job"}
    assert reason == f"ReqNodeNotAvail, {said[release]}" and waits_for_nodes(reason)
    [rec] = parse_scontrol_show_job(text(release, "show-job-drained.txt"))
    nodes = parse_sinfo_nodes(text(release, "sinfo.txt"))
    assert pending_unavailable(rec, nodes) == ["n3"]
    anywhere = {**rec, "ReqNodeList": "(null)"}  # no --nodelist: the partition's bad nodes
    assert pending_unavailable(anywhere, nodes) == ["n3"]
    assert pending_unavailable({**anywhere, "ExcNodeList": "n[2-3]"}, nodes) == []
    assert pending_unavailable({**anywhere, "Partition": "other"}, nodes) == []


@pytest.mark.parametrize("release", RELEASES)
def test_exclusion_of_an_array_with_a_running_task_is_judged_by_its_pending_tasks(
    release: str,
) -> None:
    said = text(release, "exclude-update.txt")
    assert said.startswith("exit 1\n")  # both: the running task refuses
    assert ("No error" in said) == (release == "22.05")  # 24.11 prints only the refusal
    before = parse_scontrol_show_job(text(release, "show-job-array.txt"))
    after = parse_scontrol_show_job(text(release, "show-job-array-after-exclude.txt"))
    assert [r["JobState"] for r in after] == ["PENDING", "RUNNING"]
    assert [r["ExcNodeList"] for r in pending_records(after)] == ["n2"]
    assert exclusion_applied(after, ["n2"]) and not exclusion_applied(before, ["n2"])
    assert not exclusion_applied(after, ["n2", "n3"])
    assert not exclusion_applied([r for r in after if r["JobState"] == "RUNNING"], ["n2"])


@pytest.mark.parametrize("release", RELEASES)
def test_scontrol_show_job_fields_and_end_times(release: str) -> None:
    [rec] = parse_scontrol_show_job(text(release, "show-job-run.txt"))
    start = parse_slurm_timestamp(rec["StartTime"])
    assert start is not None and rec["TimeLimit"] == "00:10:00" and rec["JobName"] == "cap-run"
    assert parse_end_time(text(release, "show-job-run.txt")) == start.timestamp() + 600
    no_limit = text(release, "show-job-nolimit.txt")
    assert parse_scontrol_show_job(no_limit)[0]["TimeLimit"] == "365-00:00:00"
    assert parse_end_time(no_limit) == pytest.approx(start.timestamp() + 365 * DAY, abs=2 * DAY)
    # 24.11 splits TRES into ReqTRES and AllocTRES; values with '=' stay whole
    tres = ["ReqTRES", "AllocTRES"] if release == "24.11" else ["TRES"]
    assert [k for k in rec if k.endswith("TRES") and k != "CfgTRES"] == tres
    assert rec[tres[-1]] == "cpu=1,node=1,billing=1"
    assert rec["NumNodes"] == "1" and rec["ReqNodeList"] == "n1"


@pytest.mark.parametrize("release", RELEASES)
def test_scontrol_show_node_and_sinfo_of_a_drained_node(release: str) -> None:
    node = parse_scontrol_record(text(release, "show-node-n3.txt"))
    assert node["State"] == "IDLE+DRAIN" and node["Reason"].startswith("GPU 3 ECC errors [root@")
    assert node["Version"].startswith(release)
    states = {n.name: n for n in parse_sinfo_nodes(text(release, "sinfo.txt"))}
    n3 = states["n3"]
    assert (n3.state, n3.reason, n3.reason_user, n3.is_bad) == (
        "drained",
        "GPU 3 ECC errors",
        "root",
        True,
    )
    assert isinstance(n3.reason_time, datetime)
    assert not states["n1"].is_bad and not states["n2"].is_bad and states["n1"].reason is None


@pytest.mark.parametrize("release", RELEASES)
def test_sacct_states_exit_codes_and_attempts(release: str) -> None:
    recs = sacct(release)
    one = {name: rs[0] for name, rs in recs.items() if len(rs) == 1}
    assert (one["cap-done"].state, one["cap-done"].exit_code) == ("COMPLETED", 0)
    assert (one["cap-fail"].state, one["cap-fail"].exit_code) == ("FAILED", 3)
    assert (one["cap-signal"].exit_code, one["cap-signal"].signal) == (0, 9)
    assert one["cap-timeout"].state == "TIMEOUT" and one["cap-timeout"].elapsed_s
    ran = one["cap-cancel-run"]
    assert ran.state == "CANCELLED" and ran.start is not None and ran.nodes == ("n1",)
    never = one["cap-cancel-pend"]  # cancelled before it ran: no start, no node
    assert (never.state, never.start, never.nodes) == ("CANCELLED", None, ())
    assert never.finished and never.end is not None
    failed, again = recs["cap-nodefail"]  # -D: the NODE_FAIL attempt, then the next one
    assert failed.state == "NODE_FAIL" and failed.nodes == ("n2",) and again.state == "CANCELLED"
    # NODE_FAIL's exit code is 0:0 on 22.05, 1:0 on 24.11: rtool judges by the state
    assert failed.exit_code == {"22.05": 0, "24.11": 1}[release]
    verdict = judge(failed, (), parse_sinfo_nodes(text(release, "sinfo.txt")))
    assert verdict.blamed == ("n2",) and verdict.basis is Basis.ONLY_NODE
    assert "cap-held" not in recs  # never eligible (held): sacct lists nothing on both


@pytest.mark.parametrize("release", RELEASES)
def test_a_users_relative_time_format_is_unreadable_so_rtool_never_asks_for_it(
    release: str,
) -> None:
    """What squeue prints under SLURM_TIME_FORMAT=relative (`19:35:51`): every Slurm call of
    rtool sets SLURM_TIME_FORMAT=standard (tests/core/test_releases_live.py runs them so)."""
    with pytest.raises(ParseError):
        parse_squeue(text(release, "squeue-relative.txt"))
