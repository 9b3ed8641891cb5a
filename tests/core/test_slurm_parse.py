"""Slurm parsers on captured output (Slurm 22.05 on Debian 12)."""

from __future__ import annotations

import pytest

from rtool.core.slurm.parse import (
    ParseError,
    format_slurm_duration,
    parse_sbatch_parsable,
    parse_scontrol_show_job,
    parse_slurm_duration,
    parse_slurm_timestamp,
    parse_squeue,
)

SQUEUE = """\
2_[2-4%1]|2|2-4%1|PENDING|JobArrayTaskLimit|root|debug|1|0:00|UNLIMITED|N/A|2026-11-21T19:39:46||arr
3|3|N/A|PENDING|JobHeldUser|root|debug|1|0:00|UNLIMITED|N/A|2026-11-21T19:39:46||held
1|1|N/A|RUNNING|None|root|debug|1|0:03|365-00:00:00|2026-11-21T19:39:47|2026-11-21T19:39:46|vm|my|job
2_1|4|1|RUNNING|None|root|debug|1|2-15:52:19|3-00:00:00|2026-11-21T19:39:47|2026-11-21T19:39:46|vm|arr
"""

SHOW_JOB = """\
JobId=2 ArrayJobId=2 ArrayTaskId=2-4%1 ArrayTaskThrottle=1 JobName=arr
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   JobState=PENDING Reason=JobArrayTaskLimit Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A
   StartTime=Unknown EndTime=Unknown Deadline=N/A
   TRES=cpu=1,mem=21694M,node=1,billing=1
   Command=/tmp/j.sh
   WorkDir=/work/main

JobId=4 ArrayJobId=2 ArrayTaskId=1 ArrayTaskThrottle=1 JobName=arr
   JobState=RUNNING Reason=None Dependency=(null)
   Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=00:00:03 TimeLimit=365-00:00:00 TimeMin=N/A
   StartTime=2026-11-21T19:39:47 EndTime=2027-11-21T19:39:47 Deadline=N/A
   NodeList=vm
"""


def test_squeue_array_pending_running_and_held() -> None:
    jobs = parse_squeue(SQUEUE)
    assert [j.job_id for j in jobs] == ["2_[2-4%1]", "3", "1", "2_1"]
    pend, held, run, task = jobs
    assert pend.state == "PENDING" and pend.reason == "JobArrayTaskLimit"
    assert pend.is_array and pend.pending_tasks == "2-4%1" and pend.array_job_id == "2"
    assert pend.time_limit is None and pend.start_time is None
    assert held.reason == "JobHeldUser" and not held.is_array
    assert run.reason is None and run.name == "my|job"  # a `|` in a name is kept
    assert run.time_limit == 365 * 86400 and run.nodelist == "vm"
    assert task.array_task == "1" and task.pending_tasks is None
    assert task.time_used == 2 * 86400 + 15 * 3600 + 52 * 60 + 19
    assert (pend.tasks, held.tasks, run.tasks, task.tasks) == (3, 1, 1, 1)


@pytest.mark.parametrize(
    ("spec", "tasks"),
    [("2-10%1", 9), ("2,5,7-8", 4), ("0-99:2%4", 50), ("1-3,junk", 3), ("junk", 1)],
)
def test_the_tasks_a_pending_array_record_stands_for(spec: str, tasks: int) -> None:
    line = SQUEUE.splitlines()[0].replace("2-4%1", spec)
    [job] = parse_squeue(line)
    assert job.pending_tasks == spec and job.tasks == tasks


def test_squeue_bad_line() -> None:
    with pytest.raises(ParseError, match="fields"):
        parse_squeue("1|2|3\n")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("5", 300),
        ("05:30", 330),
        ("1:00:00", 3600),
        ("2-15:52:19", 229939),
        ("1-00", 86400),
        ("1-02:03", 93780),
        ("UNLIMITED", None),
        ("N/A", None),
        ("INVALID", None),
    ],
)
def test_slurm_durations(text: str, seconds: float | None) -> None:
    assert parse_slurm_duration(text) == seconds


def test_format_slurm_duration() -> None:
    assert format_slurm_duration(229939) == "2-15:52:19"
    assert format_slurm_duration(600) == "00:10:00"


def test_timestamps() -> None:
    ts = parse_slurm_timestamp("2026-11-21T19:39:47")
    assert ts is not None and ts.hour == 19 and ts.tzinfo is not None
    for none in ("N/A", "Unknown", "None"):
        assert parse_slurm_timestamp(none) is None
    with pytest.raises(ParseError):
        parse_slurm_timestamp("yesterday")


def test_scontrol_show_job_records() -> None:
    recs = parse_scontrol_show_job(SHOW_JOB)
    assert len(recs) == 2
    assert recs[0]["ArrayTaskId"] == "2-4%1" and recs[0]["Reason"] == "JobArrayTaskLimit"
    assert recs[0]["TRES"] == "cpu=1,mem=21694M,node=1,billing=1"
    assert recs[0]["UserId"] == "root(0)"
    assert recs[1]["Restarts"] == "1" and recs[1]["EndTime"] == "2027-11-21T19:39:47"


def test_sbatch_parsable() -> None:
    assert parse_sbatch_parsable("123\n").job_id == "123"
    r = parse_sbatch_parsable("456;cluster2\n")
    assert r.job_id == "456" and r.cluster == "cluster2"
    with pytest.raises(ParseError):
        parse_sbatch_parsable("sbatch: error: Batch job submission failed\n")
