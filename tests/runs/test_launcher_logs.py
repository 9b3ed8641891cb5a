"""Issue 37's leftover: a launcher's `--log-dir` is read. torchrun writes each local rank's
output under DIR/<run id>_<random>/attempt_<restart>/<local rank>/{stdout,stderr}.log (the
layout of torch.distributed.elastic.multiprocessing.api.DefaultLogsSpecs); `rtool submit`
records the folder, and the root cause search reads those files: bounded tails, owner-checked,
ranks labelled."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rtool.core.slurm import Slurm
from rtool.core.state import StateDir
from rtool.runs import launcherlogs, names, signatures
from rtool.runs.config import RunWatch
from rtool.runs.model import Attempt
from rtool.runs.sources import log_reader
from tests.conftest import CliResult

Cli = Callable[..., CliResult]

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 1.2 GiB is free."
)
WAITING = (
    "[rank0]:[E1123 14:00:05.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out."
)


def _rank(run: Path, attempt: int, rank: int, stderr: str, stdout: str = "step 5\n") -> Path:
    d = run / f"attempt_{attempt}" / str(rank)
    d.mkdir(parents=True, exist_ok=True)
    (d / "stderr.log").write_text(stderr)
    (d / "stdout.log").write_text(stdout)
    for f in d.iterdir():
        f.chmod(0o644)
    return d


def test_the_log_dir_is_read_from_torchruns_words() -> None:
    cwd = "/work/run"
    assert launcherlogs.log_dir_of(["torchrun", "--log-dir", "tl", "--tee", "3"], cwd) == (
        "/work/run/tl"
    )
    assert launcherlogs.log_dir_of(["/opt/bin/torchrun", "--log_dir=/s/tl"], cwd) == "/s/tl"
    words = ["python", "-m", "torch.distributed.run", "--nproc-per-node", "2", "--log-dir", "x"]
    assert launcherlogs.log_dir_of(words, cwd) == "/work/run/x"
    assert launcherlogs.log_dir_of(["torchrun", "--nproc-per-node", "8"], cwd) is None
    assert launcherlogs.log_dir_of(["srun", "--log-dir", "x"], cwd) is None


WORKER = """\
import os, sys, time
rank = int(os.environ["RANK"])
print(f"rank {rank} up", flush=True)
if rank == 1:
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", file=sys.stderr)
    sys.exit(1)
time.sleep(60)
"""


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_real_torchrun_log_dir_names_the_failed_rank(tmp_path: Path) -> None:
    """torchrun 2 ranks on CPU, `--log-dir tl --tee 3`: rank 1 dies; its own stderr.log under
    the layout torchrun really writes names it."""
    (tmp_path / "w.py").write_text(WORKER)
    launcher = ["torchrun", "--standalone", "--nproc-per-node", "2", "--log-dir", "tl"]
    launcher += ["--tee", "3", "--max-restarts", "0"]
    logs = launcherlogs.log_dir_of(launcher, str(tmp_path))
    assert logs == str(tmp_path / "tl")
    started = time.time()
    argv = [sys.executable, "-m", "torch.distributed.run", *launcher[1:], "w.py"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=150)
    assert done.returncode == 1, done.stderr[-2000:]
    lines = launcherlogs.read(logs, started, time.time(), 64 * 1024)
    (run,) = [p for p in Path(logs).iterdir()]  # <run id>_<random>
    assert f"==> {run}/attempt_0/1/stderr.log (rank 1) <==" in lines, lines
    assert "rank 0 up" in lines and "rank 1 up" in lines
    sig = signatures.match(lines, "FAILED", nodes=("n1",))
    assert sig is not None and sig.name == "cuda-oom" and sig.rank == 1


def test_the_rank_that_failed_is_named_from_its_own_log(tmp_path: Path) -> None:
    logs = tmp_path / "tl"
    run = logs / "job88_ab12cd"
    _rank(run, 0, 0, "old attempt\n" + OOM + "\n")  # the workers' earlier restart: not read
    _rank(run, 1, 0, WAITING + "\n")
    _rank(run, 1, 1, "Traceback (most recent call last):\n" + OOM + "\n")
    now = time.time()
    lines = launcherlogs.read(str(logs), now - 60, now, 64 * 1024)
    assert lines[0] == f"==> {run}/attempt_1/0/stderr.log (rank 0) <=="
    assert f"==> {run}/attempt_1/1/stderr.log (rank 1) <==" in lines
    assert "old attempt" not in lines
    sig = signatures.match(lines, "FAILED", nodes=("n1",))
    assert sig is not None and sig.name == "cuda-oom" and sig.rank == 1 and sig.node == "n1"


def test_watch_run_and_history_read_them_through_the_runs_entry(tmp_path: Path) -> None:
    logs = tmp_path / "tl"
    _rank(logs / "r_x1", 0, 0, WAITING + "\n")
    _rank(logs / "r_x1", 0, 1, OOM + "\n")
    spec = RunWatch(name="r", launcher_logs=str(logs))
    read = log_reader(spec, 1 << 20)
    assert read is not None
    a = Attempt(run="r", number=1, job_id="5", state="FAILED", started=time.time() - 30)
    got = read(a)
    assert got is not None and got[0] == str(logs)
    sig = signatures.match(got[1], "FAILED")
    assert sig is not None and sig.name == "cuda-oom" and sig.rank == 1
    old = Attempt(run="r", number=1, job_id="4", state="FAILED", started=1000.0, ended=2000.0)
    assert read(old) is None  # its torchrun folders are not the ones changed while it ran


def test_two_torchruns_name_no_rank_and_untrusted_files_are_not_read(tmp_path: Path) -> None:
    logs = tmp_path / "tl"
    _rank(logs / "r_n1", 0, 0, WAITING + "\n")
    bad = _rank(logs / "r_n2", 0, 0, OOM + "\n")
    (bad / "stderr.log").chmod(0o666)  # anyone could have written it
    (logs / "r_n2" / "attempt_0" / "1").symlink_to(bad)  # a link is not a rank folder
    now = time.time()
    lines = launcherlogs.read(str(logs), now - 60, now, 64 * 1024)
    assert lines[0] == f"==> {logs}/r_n1/attempt_0/0/stderr.log () <=="  # local rank 0 of two
    assert OOM not in lines
    assert not any("/attempt_0/1/" in ln for ln in lines)
    os.chmod(logs, 0o777)  # others could rename the folders: none of it is read
    try:
        assert launcherlogs.read(str(logs), now - 60, now, 64 * 1024) == []
    finally:
        os.chmod(logs, 0o755)


@pytest.mark.slurm
@pytest.mark.timeout(120)
def test_submit_records_torchruns_log_dir_for_the_runs_watch(
    cli: Cli, slurm: Slurm, job_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('hi')\n")
    launcher = "torchrun --nproc-per-node 2 --log-dir tl --tee 3"
    args = ["--job-name", job_name, "--parsable", "--launcher", launcher, "--", "--hold"]
    res = cli("submit", "train.py", *args)
    assert res.code == 0, res.err
    try:
        sub = names.find(StateDir(), job_name)
        assert sub is not None and sub.launcher_logs == str(tmp_path / "tl")
        base = names.watch_base(StateDir(), job_name, [])
        assert base["launcher_logs"] == str(tmp_path / "tl")
    finally:
        slurm.scancel([res.out.strip()])


def test_a_hang_across_rank_logs_is_the_rank_not_waiting_in_a_collective(tmp_path: Path) -> None:
    """Rank 1's shim fired (its stacks are in the backward's allreduce: waiting); rank 0 ended
    with it, stuck in its own code: each in its own stderr.log, the hang is rank 0's."""
    logs = tmp_path / "tl"
    _rank(logs / "r_a", 0, 0, (
        "rtool.shim: PEER_FAILED at step 20: rank 1 hung: no step for 4.1s after step 20 "
        "(hang_after 4s); this rank ended with it; the stacks of all threads:\n"
        "Thread 0x00007f2e93fff640 (most recent call first):\n"
        '  File "/w/ddp_toy.py", line 50 in fault\n'
    ))  # fmt: skip
    _rank(logs / "r_a", 0, 1, (
        "rtool.shim: HUNG at step 20: no step for 4.1s after step 20 (hang_after 4s); the "
        "stacks of all threads:\n"
        "Thread 0x00007f2e93fff640 (most recent call first):\n"
        '  File "/v/lib/python3.11/site-packages/torch/autograd/graph.py", line 829 in '
        "_engine_run_backward\n"
    ))  # fmt: skip
    now = time.time()
    sig = signatures.match(launcherlogs.read(str(logs), now - 60, now, 1 << 16), "FAILED")
    assert sig is not None and sig.name == "hang" and sig.rank == 0, sig
