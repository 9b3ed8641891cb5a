"""Issue 25 findings 2, 3 and 10: the attempt records. The batch script's `_rtool_record` (as
`rtool submit` renders it) is run in bash against planted symlinks, FIFOs, foreign and forged
heartbeats; the reader gets forged lines; a node list that would expand to 10^10 names.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from rtool.core.heartbeat import Heartbeat, RunState
from rtool.core.slurm.parse import MAX_HOSTS, ParseError, expand_hostlist
from rtool.runs import attempt_record_writer
from rtool.runs.attempt_records import MAX_LINE, parse_record, parse_records, read_records
from rtool.slurm_templates.jobs import render_job
from rtool.slurm_templates.training import TrainingJob
from tests.hardening.conftest import OTHER_UID

JOB = "41"


def _prelude_function(heartbeat: Path) -> str:
    """The `_rtool_record` function of the rendered batch script."""
    job = TrainingJob(job_name="llm", script="/runs/train.py", heartbeat=str(heartbeat))
    text = render_job(job)
    m = re.search(r"^_rtool_record\(\) \{\n.*?^\}\n", text, re.M | re.S)
    assert m, text
    return m.group(0)


def _record(
    tmp_path: Path, *args: str, heartbeat: Path | None = None, records: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the batch script's `_rtool_record ARGS` as a job would (bounded: 60 s)."""
    heartbeat = heartbeat or tmp_path / "hb.json"
    env = {
        **os.environ,
        "SLURM_JOB_ID": JOB,
        "SLURMD_NODENAME": "n1",
        "SLURM_JOB_NODELIST": "n1",
        "RTOOL_HEARTBEAT": str(heartbeat),
        "RTOOL_RUN_RECORDS": str(records or Path(f"{heartbeat}.attempts")),
    }
    script = _prelude_function(heartbeat) + "_rtool_record " + " ".join(args) + "\n"
    return subprocess.run(
        ["bash", "-c", script], env=env, text=True, capture_output=True, timeout=60, cwd=tmp_path
    )


def _heartbeat(job: str = JOB, **kw: object) -> Heartbeat:
    base: dict[str, object] = {"state": RunState.STOPPED, "time": 1000.0, "job_id": job, "step": 7}
    return Heartbeat(**{**base, **kw})  # type: ignore[arg-type]


def test_the_end_record_copies_this_attempts_heartbeat(tmp_path: Path) -> None:
    hb = tmp_path / "hb.json"
    hb.write_text(_heartbeat(error=None, stop_detail="x" * 5000).to_json())
    res = _record(tmp_path, "end", "--rc", "3")
    assert res.returncode == 0, res.stderr
    records = tmp_path / "hb.json.attempts"
    assert records.stat().st_mode & 0o777 == 0o600
    (rec,) = read_records(str(records)).records
    assert (rec.event, rec.job_id, rec.rc, rec.node) == ("end", JOB, 3, "n1")
    assert rec.heartbeat is not None and rec.heartbeat.step == 7
    assert len(rec.heartbeat.stop_detail or "") <= attempt_record_writer.TEXT_LIMIT  # clipped


FORGED = {
    # the first prelude pasted the heartbeat raw: break out of it and set keys twice
    "duplicate keys": '{"state":"running","time":1},"job_id":"999","rc":1,"x":{"y":1}',
    # a carriage return splits the line for a reader using splitlines()
    "carriage return": '{"x":1}}\r{"event":"end","job_id":"999","time":5,"rc":1,'
    '"heartbeat":{"y":1}',
    # so does a Unicode line separator inside a JSON string
    "line separator": '{"state":"running","time":1,"run":"a\u2028{\\"event\\":\\"end\\",'
    '\\"job_id\\":\\"999\\",\\"time\\":5,\\"rc\\":1}"}',
}


@pytest.mark.parametrize("text", FORGED.values(), ids=FORGED.keys())
def test_a_heartbeat_cannot_forge_records(tmp_path: Path, text: str) -> None:
    (tmp_path / "hb.json").write_text(text)
    res = _record(tmp_path, "end", "--rc", "0")
    assert res.returncode == 0, res.stderr
    got = read_records(str(tmp_path / "hb.json.attempts"))
    assert [(r.job_id, r.rc) for r in got.records] == [(JOB, 0)], got
    assert all(r.heartbeat is None for r in got.records)


def test_a_heartbeat_of_another_user_or_attempt_or_a_symlink_is_not_copied(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "credentials.json"  # any JSON file you can read
    secret.write_text(_heartbeat(run="token-abc123").to_json())
    link = tmp_path / "hb.json"
    link.symlink_to(secret)
    _record(tmp_path, "end", "--rc", "0")
    foreign = tmp_path / "foreign.json"
    foreign.write_text(_heartbeat(run="planted").to_json())
    os.chown(foreign, OTHER_UID, -1)
    records = tmp_path / "all.attempts"
    _record(tmp_path, "end", "--rc", "0", heartbeat=foreign, records=records)
    stale = tmp_path / "stale.json"
    stale.write_text(_heartbeat(job="40", run="previous attempt").to_json())
    _record(tmp_path, "end", "--rc", "0", heartbeat=stale, records=records)
    lines = (tmp_path / "hb.json.attempts").read_text() + records.read_text()
    assert "token-abc123" not in lines and "planted" not in lines and "previous" not in lines
    assert len(read_records(str(records)).records) == 2


def test_a_fifo_at_the_records_path_never_hangs_the_batch_script(tmp_path: Path) -> None:
    fifo = tmp_path / "hb.json.attempts"
    os.mkfifo(fifo)
    start = time.monotonic()
    res = _record(tmp_path, "start")  # the first prelude blocked here for ever
    assert time.monotonic() - start < 30
    assert res.returncode == 0 and "record was not written" in res.stderr


def test_a_symlink_swapped_in_never_gets_a_record(tmp_path: Path) -> None:
    """The first prelude tested `[ ! -L ]`, ran `$(date)`, then opened with `>>`: a symlink
    swapped in between got the line (seen appending to ~/.bashrc in 16 of 200 tries)."""
    bashrc = tmp_path / "bashrc"
    bashrc.write_text("# mine\n")
    before = bashrc.read_text()
    path = tmp_path / "hb.json.attempts"
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            for make in (lambda: path.symlink_to(bashrc), lambda: path.write_text("")):
                path.unlink(missing_ok=True)
                with contextlib.suppress(FileExistsError):  # the script made it first: swap on
                    make()
                time.sleep(0.0005)

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        loop = "for i in $(seq 40); do _rtool_record start; done"
        heartbeat = tmp_path / "hb.json"
        env = {**os.environ, "SLURM_JOB_ID": JOB, "RTOOL_RUN_RECORDS": str(path)}
        script = _prelude_function(heartbeat) + loop + "\n"
        subprocess.run(["bash", "-c", script], env=env, capture_output=True, timeout=300)
    finally:
        stop.set()
        swapper.join()
    assert bashrc.read_text() == before


def test_a_records_file_others_can_write_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "hb.json.attempts"
    path.write_text("")
    os.chmod(path, 0o666)
    res = _record(tmp_path, "start", records=path)
    assert "record was not written" in res.stderr and path.read_text() == ""
    with pytest.raises(attempt_record_writer.RecordWriteError, match="writable by group or others"):
        attempt_record_writer.append_line(str(path), "{}")


def _line(**kw: object) -> str:
    base: dict[str, object] = {"event": "end", "job_id": "41", "time": 1000.0, "rc": 0}
    return json.dumps({**base, **kw})


BAD_LINES = {
    "duplicate key": '{"event":"end","job_id":"41","time":1000,"rc":0,"rc":1}',
    "duplicate key inside": _line(heartbeat=None)[:-1].replace(
        '"heartbeat": null', '"heartbeat": {"state":"running","time":1,"time":2}'
    )
    + "}",
    "carriage return": _line() + "\r",
    "unknown key": _line(status="COMPLETED"),
    "bad job id": _line(job_id="--state=RUNNING"),
    "exit code out of range": _line(rc=300),
    "boolean restart": _line(restart=True),
    "infinite time": '{"event":"end","job_id":"41","time":Infinity}',
    "a heartbeat of another attempt": _line(heartbeat=_heartbeat(job="77").to_dict()),
    "too long": _line(node="n" * MAX_LINE),
    "a node list past the cap": _line(nodelist="n[0-99999][0-99999]"),
    "a start with an exit code": _line(event="start", rc=1),
    "not an object": "[1, 2]",
}


@pytest.mark.parametrize("line", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_the_reader_skips_a_bad_line_with_a_warning(
    line: str, caplog: pytest.LogCaptureFixture
) -> None:
    good = _line(heartbeat=_heartbeat().to_dict())
    parse_record(good)
    with caplog.at_level(logging.WARNING):
        got = parse_records("\n".join([good, line, good]) + "\n")
    assert len(got.records) == 2 and len(got.skipped) == 1, got.skipped
    assert "bad record line" in got.note() and "bad record line" in caplog.text


def test_hostlist_expansion_is_capped() -> None:
    start = time.monotonic()
    with pytest.raises(ParseError, match=f"more than {MAX_HOSTS} hosts"):
        expand_hostlist("n[0-99999][0-99999]")
    with pytest.raises(ParseError, match="more than"):
        expand_hostlist(",".join(["n[1-60000]"] * 2))
    assert time.monotonic() - start < 1
    assert len(expand_hostlist("n[1-100000]")) == MAX_HOSTS


def test_the_end_record_waits_for_a_save_on_the_way_out(tmp_path: Path) -> None:
    """With a preemption's GraceTime 0, Slurm's SIGTERM ends srun while the training still
    saves: the end record waits for the stop the training writes after its save (seen on the
    local cluster: the attempt showed no stop reason instead of `preempted`)."""
    hb = tmp_path / "hb.json"
    hb.write_text(_heartbeat(state=RunState.SAVING).to_json())
    stopped = _heartbeat(stop_reason="preempted", stop_job_id=JOB, last_saved_step=7)
    later = threading.Timer(1.5, lambda: hb.write_text(stopped.to_json()))
    later.start()
    try:
        res = _record(tmp_path, "end", "--rc", "143")
    finally:
        later.join()
    assert res.returncode == 0, res.stderr
    (rec,) = read_records(str(tmp_path / "hb.json.attempts")).records
    assert rec.heartbeat is not None and rec.heartbeat.state is RunState.STOPPED
    assert (rec.heartbeat.stop_reason, rec.heartbeat.last_saved_step) == ("preempted", 7)


def test_a_training_still_running_gets_its_stop_in_a_second_end_record(tmp_path: Path) -> None:
    """GraceTime 0 under load: the batch shell's SIGTERM came before the training's shim had
    even decided its stop (the heartbeat still `running`, its process alive on this host; seen
    in CI on 24.11: the attempt showed no stop reason). The end record is written at once (a
    batch shell killed at KillWait keeps it), then again, with the same time, once the training
    wrote its stop; the ledger reads the last. A training already gone gets the one record."""
    hb, records = tmp_path / "hb.json", tmp_path / "hb.json.attempts"
    training = subprocess.Popen(["sleep", "30"])
    try:
        running = _heartbeat(state=RunState.RUNNING, pid=training.pid, host=socket.gethostname())
        hb.write_text(running.to_json())
        stopped = _heartbeat(
            stop_reason="preempted", stop_job_id=JOB, last_saved_step=7, pid=training.pid
        )
        first: list[int] = []

        def stop() -> None:
            first.append(len(read_records(str(records)).records))  # written before the stop
            hb.write_text(stopped.to_json())

        later = threading.Timer(1.5, stop)
        later.start()
        try:
            res = _record(tmp_path, "end", "--rc", "143")
        finally:
            later.join()
    finally:
        training.kill()
        training.wait()
    assert res.returncode == 0, res.stderr
    assert first == [1]
    ends = read_records(str(records)).records
    assert [r.heartbeat.state for r in ends if r.heartbeat] == [RunState.RUNNING, RunState.STOPPED]
    assert ends[0].time == ends[1].time and ends[1].heartbeat.stop_reason == "preempted"  # type: ignore[union-attr]
    hb.write_text(running.to_json())  # its process is gone now: one record, at once
    t0 = time.monotonic()
    res = _record(tmp_path, "end", "--rc", "137")
    assert res.returncode == 0 and time.monotonic() - t0 < 10, res.stderr
    assert len(read_records(str(records)).records) == 3


def test_the_second_end_record_follows_a_training_that_began_its_save_meanwhile(
    tmp_path: Path,
) -> None:
    """The first record copied `running`; by the time the writer looks again the training is
    `saving` (CI on 22.05: the second record was then given up): it waits for the stop."""
    hb = tmp_path / "hb.json"
    training = subprocess.Popen(["sleep", "30"])
    try:
        running = _heartbeat(state=RunState.RUNNING, pid=training.pid, host=socket.gethostname())
        hb.write_text(_heartbeat(state=RunState.SAVING, pid=training.pid).to_json())
        stopped = _heartbeat(
            stop_reason="preempted", stop_job_id=JOB, last_saved_step=7, pid=training.pid
        )
        later = threading.Timer(1.0, lambda: hb.write_text(stopped.to_json()))
        later.start()
        rec = attempt_record_writer.from_env("end", {"SLURM_JOB_ID": JOB}, 143, 1000.0)
        try:
            line = attempt_record_writer.last_word(rec, str(hb), running, None, 10.0)
        finally:
            later.join()
    finally:
        training.kill()
        training.wait()
    assert line is not None
    assert parse_record(line).heartbeat.stop_reason == "preempted"  # type: ignore[union-attr]


def test_a_record_writer_that_outlived_its_attempt_never_watches_the_next(
    tmp_path: Path,
) -> None:
    """Killed at KillWait, a batch shell may leave its `rtool record` behind (the local
    cluster's proctrack loses it); the requeued attempt's heartbeat is not this attempt's last
    word: the writer gives up at once, it writes no second record."""
    hb = tmp_path / "hb.json"
    training = subprocess.Popen(["sleep", "30"])
    try:
        here = {"pid": training.pid, "host": socket.gethostname()}
        running = _heartbeat(state=RunState.RUNNING, **here)
        hb.write_text(_heartbeat(state=RunState.RUNNING, restart_count=1, **here).to_json())
        rec = attempt_record_writer.from_env("end", {"SLURM_JOB_ID": JOB}, 143, 1000.0)
        t0 = time.monotonic()
        assert attempt_record_writer.last_word(rec, str(hb), running, None, 10.0) is None
        assert time.monotonic() - t0 < 5
    finally:
        training.kill()
        training.wait()


def test_a_save_that_never_ends_holds_the_end_record_a_bounded_time(tmp_path: Path) -> None:
    hb = tmp_path / "hb.json"
    hb.write_text(_heartbeat(state=RunState.SAVING).to_json())
    rec = attempt_record_writer.from_env("end", {"SLURM_JOB_ID": JOB}, 143, 1000.0)
    t0 = time.monotonic()
    line = attempt_record_writer.line_for(rec, str(hb), wait=0.6)
    assert 0.5 < time.monotonic() - t0 < 5
    assert parse_record(line).heartbeat.state is RunState.SAVING  # type: ignore[union-attr]
