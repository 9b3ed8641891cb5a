"""Grouping the ranks' stack dumps (pure, on faulthandler's own format), reading them only
from trusted files of the launch, and the in-place restart record that names the odd rank."""

from __future__ import annotations

import os
from pathlib import Path

from rtool.core.heartbeat import Heartbeat, RunState
from rtool.nodes.preflight_job import JobInfo
from rtool.nodes.restart import Failed, record
from rtool.runs.stacks import parse, read_stacks, summary

LIB = "/venv/lib/python3.11/site-packages/torch/distributed"
IN_COLLECTIVE = f"""Thread 0x00007f0000000001 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/venv/lib/python3.11/site-packages/rtool/shim/monitor.py", line 192 in _run

Thread 0x00007f0000000002 (most recent call first):
  File "{LIB}/distributed_c10d.py", line 2050 in all_reduce
  File "{LIB}/c10d_logger.py", line 81 in wrapper
  File "/home/me/train.py", line 212 in main
  File "/home/me/train.py", line 300 in <module>
"""
IN_LOADER = """Current thread 0x00007f0000000003 (most recent call first):
  File "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 631 in __next__
  File "/home/me/train.py", line 198 in main
  File "/home/me/train.py", line 300 in <module>
"""


#: The main thread writing the dump itself, from the shim's handler inside the collective (an
#: editable install: the shim is not under site-packages).
DUMPING = f"""Current thread 0x00007f0000000004 (most recent call first):
  File "/home/me/src/rtool/rtool/shim/hang.py", line 164 in _dump_to
  File "/home/me/src/rtool/rtool/shim/watch.py", line 90 in round
  File "{LIB}/distributed_c10d.py", line 2050 in all_reduce
  File "{LIB}/c10d_logger.py", line 81 in wrapper
  File "/home/me/train.py", line 212 in main
  File "/home/me/train.py", line 300 in <module>
"""


def _dump(rank: int, host: str, body: str, launch: int = 0) -> str:
    return f"rtool-stacks rank={rank} host={host} pid={100 + rank} launch={launch}\n{body}"


def test_the_largest_group_then_every_odd_rank() -> None:
    stacks = [parse(_dump(r, f"gpu{r // 8:03d}", IN_COLLECTIVE)) for r in range(16) if r != 7]
    stacks.append(parse(_dump(7, "gpu017", IN_LOADER)))
    got = summary([s for s in stacks if s is not None])
    assert (
        got
        == "15 ranks in all_reduce at train.py:212; rank 7 on gpu017 in __next__ at train.py:198"
    )
    one = parse(_dump(0, "n1", IN_LOADER))
    assert one is not None and summary([one]) == "rank 0 on n1 in __next__ at train.py:198"
    many = [parse(_dump(r, "n1", IN_LOADER if r % 2 else IN_COLLECTIVE)) for r in range(12)]
    text = summary([s for s in many if s is not None])
    assert text is not None and text.startswith("6 ranks in all_reduce at train.py:212; rank 1 on")
    assert text.endswith("; 2 more ranks elsewhere"), text
    assert parse("not a dump\n" + IN_LOADER) is None and summary([]) is None


def test_a_rank_writing_its_own_dump_is_where_the_shim_interrupted_it() -> None:
    stacks = [parse(_dump(r, "n1", DUMPING if r == 2 else IN_COLLECTIVE)) for r in range(3)]
    got = summary([s for s in stacks if s is not None])
    assert got == "3 ranks in all_reduce at train.py:212"


def test_only_trusted_files_of_the_launch_are_read(tmp_path: Path) -> None:
    abort = tmp_path / "kill.abort-91"
    for rank, body in ((0, IN_COLLECTIVE), (1, IN_LOADER)):
        (tmp_path / f"kill.abort-91.stacks-{rank}").write_text(_dump(rank, "n1", body))
    (tmp_path / "kill.abort-91.stacks-2").write_text(_dump(2, "n1", IN_LOADER, launch=1))
    bad = tmp_path / "kill.abort-91.stacks-3"
    bad.write_text(_dump(3, "n2", IN_LOADER))
    os.chmod(bad, 0o666)  # writable by others: not trusted
    assert [s.rank for s in read_stacks(str(abort), 0)] == [0, 1]


def test_the_restart_record_of_a_hung_launch_says_where_each_rank_was(tmp_path: Path) -> None:
    abort = tmp_path / "kill.abort-91"
    for rank in range(3):
        body = IN_LOADER if rank == 2 else IN_COLLECTIVE
        (tmp_path / f"kill.abort-91.stacks-{rank}").write_text(_dump(rank, f"n{rank}", body))
    hb = Heartbeat(
        state=RunState.STOPPED, time=1.0, job_id="91", stop_reason="hung",
        stop_detail="no step for 9.0s after step 850 (hang_after 8s)",
    )  # fmt: skip
    env = {"SLURM_JOB_ID": "91", "RTOOL_ABORT_FILE": str(abort)}
    info = JobInfo(job_id="91", name="llm", nodes=["n1"], partition=None, restarts=0)
    rec = record(env, info, Failed(89, 0, hb), 2.0, 1)
    assert rec.cause == "hung"
    assert rec.detail == (
        "no step for 9.0s after step 850 (hang_after 8s); stacks: 2 ranks in all_reduce at "
        "train.py:212; rank 2 on n2 in __next__ at train.py:198"
    )


def test_the_end_record_of_a_hung_attempt_carries_its_stacks(tmp_path: Path) -> None:
    """A hang not restarted in place: the batch script's end record (its heartbeat copy) says
    where the ranks were; a launch that did not hang, or another launch's dumps, say nothing."""
    from rtool.runs.attempt_record_writer import hung_stacks

    abort = str(tmp_path / "kill.abort-91")
    for rank in range(3):
        Path(f"{abort}.stacks-{rank}").write_text(_dump(rank, "n1", IN_COLLECTIVE, launch=1))
    Path(f"{abort}.stacks-3").write_text(_dump(3, "n2", IN_LOADER, launch=1))
    hb = Heartbeat(RunState.STOPPED, 1.0, stop_reason="hung", launch=1)
    got = hung_stacks(hb, abort).stacks
    assert got == "3 ranks in all_reduce at train.py:212; rank 3 on n2 in __next__ at train.py:198"
    assert hung_stacks(hb.replace(stop_reason="peer_failed"), abort).stacks == got
    assert hung_stacks(hb.replace(stop_reason="time_limit"), abort).stacks is None
    assert hung_stacks(hb.replace(state=RunState.CRASHED), abort).stacks is None
    assert hung_stacks(hb.replace(launch=0), abort).stacks is None  # another launch's dumps
    assert hung_stacks(hb, None).stacks is None
