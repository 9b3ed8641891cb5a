"""The NCCL flight recorder's dumps of a launch (rtool.runs.flight): listed only from a trusted
folder, only trusted regular files named as torch names them, bounded, never opened; and said
after the hang text of the restart record and of the end record."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rtool.core.heartbeat import Heartbeat, RunState
from rtool.nodes.preflight_job import JobInfo
from rtool.nodes.restart import Failed, record
from rtool.runs import flight
from rtool.runs.attempt_record_writer import TEXT_LIMIT, hung_stacks
from rtool.runs.flight import Dump, appended, collect, describe, folder_for, ranks_text
from tests.runs.test_stacks import IN_COLLECTIVE, IN_LOADER, _dump

READ = "python -m torch.distributed.flight_recorder.fr_trace"


def _plant(folder: Path, ranks: range, body: bytes = b"\x80\x04 not unpickled") -> None:
    folder.mkdir(mode=0o700, exist_ok=True)
    for rank in ranks:
        (folder / f"nccl_trace_rank_{rank}").write_bytes(body * (rank + 1))


def test_only_trusted_dumps_named_as_torch_names_them_are_listed(tmp_path: Path) -> None:
    folder = tmp_path / "abort.nccl-0"
    _plant(folder, range(2))
    foreign = folder / "nccl_trace_rank_2"
    foreign.write_bytes(b"x")
    os.chown(foreign, 4242, 4242)  # another user's file
    loose = folder / "nccl_trace_rank_3"
    loose.write_bytes(b"x")
    os.chmod(loose, 0o666)  # writable by others
    (folder / "nccl_trace_rank_4").symlink_to(folder / "nccl_trace_rank_0")
    (folder / "nccl_trace_rank_5").mkdir()
    for name in ("nccl_trace_rank_", "nccl_trace_rank_6.tmp", "other_7", "nccl_trace_rank_x"):
        (folder / name).write_bytes(b"x")
    size = len(b"\x80\x04 not unpickled")
    assert collect(str(folder)) == [
        Dump(0, size, f"{folder}/nccl_trace_rank_0"),
        Dump(1, 2 * size, f"{folder}/nccl_trace_rank_1"),
    ]


def test_an_untrusted_or_linked_or_missing_folder_gives_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "abort.nccl-0"
    _plant(folder, range(4))
    link = tmp_path / "abort.nccl-1"
    link.symlink_to(folder)
    assert len(collect(str(folder))) == 4
    assert collect(str(link)) == []  # never through a link
    assert collect(str(tmp_path / "abort.nccl-2")) == []
    os.chmod(folder, 0o777)
    assert collect(str(folder)) == []  # others could plant dumps there
    os.chmod(folder, 0o700)
    os.chown(folder, 4242, 4242)
    assert collect(str(folder)) == []  # another user's folder


def test_the_names_looked_at_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "abort.nccl-0"
    _plant(folder, range(60), b"")
    monkeypatch.setattr(flight, "MAX_ENTRIES", 25)
    assert len(collect(str(folder))) == 25


def test_the_text_names_the_count_the_ranks_and_how_to_read_them() -> None:
    dumps = [Dump(r, 10, f"/f/nccl_trace_rank_{r}") for r in (0, 1, 2, 3)]
    assert describe(dumps, "/f") == (
        f"NCCL flight recorder: 4 dumps in /f (ranks 0-3); read them: {READ} /f"
    )
    assert describe(dumps[2:3], "/f", room=40) == "NCCL flight recorder: 1 dump in /f (rank 2)"
    folder = "/scratch/" + "f" * 60
    assert describe(dumps, folder, room=200) == (
        f"NCCL flight recorder: 4 dumps in {folder} (ranks 0-3); read them: {READ} <that folder>"
    )
    assert describe([], "/f") is None
    assert ranks_text([9, 0, 1, 2, 3, 5, 7, 8]) == "0-3, 5, 7-9"
    assert ranks_text(range(0, 20, 2), most=3) == "0, 2, 4, …"


def test_appended_keeps_the_dumps_said_within_the_room(tmp_path: Path) -> None:
    abort = str(tmp_path / "abort")
    _plant(Path(folder_for(abort, 1)), range(4))
    said = f"NCCL flight recorder: 4 dumps in {abort}.nccl-1 (ranks 0-3)"
    assert appended("hung", abort, 1, 1000) == f"hung; {said}; read them: {READ} {abort}.nccl-1"
    long = appended("x" * 400, abort, 1, 300)
    assert long is not None and len(long) <= 300 and long.endswith(f"…; {said}")
    assert appended("hung", abort, 0, 300) == "hung"  # launch 0 left no dump
    assert appended(None, abort, 0, 300) is None
    assert appended("hung", None, 1, 300) == "hung"


def test_the_hang_records_name_the_dumps_of_their_launch(tmp_path: Path) -> None:
    abort = str(tmp_path / "kill.abort-91")
    for rank in range(4):
        body = IN_LOADER if rank == 3 else IN_COLLECTIVE
        Path(f"{abort}.stacks-{rank}").write_text(_dump(rank, "n1", body, launch=1))
    _plant(Path(folder_for(abort, 1)), range(4))
    said = f"NCCL flight recorder: 4 dumps in {abort}.nccl-1 (ranks 0-3)"
    hb = Heartbeat(RunState.STOPPED, 1.0, job_id="91", stop_reason="hung", launch=1)
    got = hung_stacks(hb, abort).stacks  # the end record of a hang not restarted in place
    assert got is not None and len(got) <= TEXT_LIMIT
    assert got.startswith("3 ranks in all_reduce at train.py:212; rank 3 on n1 in __next__")
    assert f"; {said}" in got
    # a collective's timeout aborts the process (no hang of rtool's): the dumps are said alone
    crashed = hung_stacks(hb.replace(state=RunState.CRASHED), abort).stacks
    assert crashed is not None and crashed.startswith(said)
    assert hung_stacks(hb.replace(launch=0), abort).stacks is None
    assert hung_stacks(hb.replace(state=RunState.FINISHED), abort).stacks is None
    env = {"SLURM_JOB_ID": "91", "RTOOL_ABORT_FILE": abort}
    info = JobInfo(job_id="91", name="llm", nodes=["n1"], partition=None, restarts=0)
    detail = record(env, info, Failed(89, 1, hb.replace(stop_detail="no step")), 2.0, 2).detail
    assert detail.startswith("no step; stacks: 3 ranks in all_reduce at train.py:212")
    assert detail.endswith(f"; {said}; read them: {READ} {abort}.nccl-1")
