"""The exit time a stop needs, learned from the batch records of earlier attempts
(rtool/shim/exit_need.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rtool.shim.exit_need import RECORDS_TAIL, exit_need, longest_exit


def start(job: str, t: float, restart: int = 0) -> str:
    return json.dumps({"event": "start", "job_id": job, "restart": restart, "time": t})


def end(job: str, t: float, stop: float | None, restart: int = 0, state: str = "stopped") -> str:
    hb = {"state": state, "stop_job_id": job, "stop_time": stop, "restart_count": restart}
    rec = {"event": "end", "job_id": job, "restart": restart, "time": t, "heartbeat": hb}
    return json.dumps(rec)


# The two tasks of the 16-node array (bench/array_spare.py, 2026-11-29, Slurm 22.05): task 1
# (job 49750) stopped at 1795925300.37 and its batch shell wrote its end 11.71 s later; task 2
# (49749) stopped 3.3 s before its limit, and Slurm's SIGTERM came before the exit was over.
ARRAY = [
    start("49750", 1795925136.876),
    end("49750", 1795925312.079, 1795925300.3669667),
    start("49749", 1795925313.981),
    end("49749", 1795925496.627, 1795925488.7648711),
]


def write(tmp_path: Path, lines: list[str], mode: int = 0o600) -> Path:
    path = tmp_path / "hb.json.attempts"
    path.write_text("".join(line + "\n" for line in lines))
    path.chmod(mode)
    return path


def test_the_longest_stop_to_end_of_the_earlier_attempts(tmp_path: Path) -> None:
    assert abs(exit_need(str(write(tmp_path, ARRAY))) - 11.712) < 0.001
    assert abs(exit_need(str(write(tmp_path, ARRAY[2:]))) - 7.862) < 0.001


def test_a_heartbeat_carried_from_an_earlier_attempt_is_not_this_attempts_stop() -> None:
    # attempt 1 crashed before its first heartbeat: its end record carries attempt 0's stop
    lines = [start("7", 100.0), end("7", 150.0, 140.0), start("8", 160.0), end("8", 200.0, 140.0)]
    assert longest_exit(lines) == 10.0
    # a stop made in another job, or no stop at all (a crash), counts nothing
    other = json.loads(end("9", 300.0, 290.0))
    other["heartbeat"]["stop_job_id"] = "8"
    assert longest_exit([start("9", 280.0), json.dumps(other)]) == 0.0
    assert longest_exit([start("9", 280.0), end("9", 300.0, 290.0, state="crashed")]) == 0.0
    # an end without its start (cut from the tail) or longer than any exit counts nothing
    assert longest_exit([end("9", 300.0, 290.0)]) == 0.0
    assert longest_exit([start("9", 0.0), end("9", 5000.0, 10.0)]) == 0.0


def test_no_records_or_untrusted_records_teach_nothing(tmp_path: Path) -> None:
    assert exit_need(None) == 0.0
    assert exit_need(str(tmp_path / "missing")) == 0.0
    assert exit_need(str(write(tmp_path, ARRAY, mode=0o666))) == 0.0  # anyone could stretch it
    link = tmp_path / "link"
    link.symlink_to(write(tmp_path, ARRAY))
    assert exit_need(str(link)) == 0.0
    (tmp_path / "dir").mkdir()
    assert exit_need(str(tmp_path / "dir")) == 0.0


def test_only_the_tail_is_read(tmp_path: Path) -> None:
    filler = json.dumps({"event": "note", "pad": "x" * 200})
    lines = [start("1", 0.0), end("1", 50.0, 10.0)] + [filler] * (RECORDS_TAIL // 200 + 10)
    path = write(tmp_path, [*lines, start("2", 100.0), end("2", 105.0, 103.0)])
    assert os.path.getsize(path) > RECORDS_TAIL
    assert exit_need(str(path)) == 2.0  # the 40 s exit far back is not read


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=80), st.sampled_from(ARRAY)), max_size=12))
def test_any_lines_give_a_bounded_time_and_never_raise(lines: list[str]) -> None:
    assert 0.0 <= longest_exit(lines) <= 600.0
