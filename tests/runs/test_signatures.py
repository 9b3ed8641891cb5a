"""Failure signatures on captured log tails, and the attempt record's JSON round trip."""

from __future__ import annotations

import os

import pytest

from rtool.runs import describe, signatures
from rtool.runs.logtail import UntrustedFile, read_tail, tail_lines
from rtool.runs.model import Attempt, Ledger, Source
from rtool.runs.signatures.base import Signature

CUDA_OOM = """\
Traceback (most recent call last):
  File "train.py", line 40, in <module>
    loss = model(batch)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total)
srun: error: n2: task 0: Exited with exit code 1
"""
NCCL_TIMEOUT = (
    "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600042 ms\n"
)
PLAIN_TB = """\
Traceback (most recent call last):
  File "train.py", line 3, in <module>
    open("/missing")
FileNotFoundError: [Errno 2] No such file or directory: '/missing'
"""


@pytest.mark.parametrize(
    ("text", "state", "name"),
    [
        (CUDA_OOM, "FAILED", "cuda-oom"),
        (NCCL_TIMEOUT, "FAILED", "nccl-timeout"),
        ("n1:42:43 [0] NCCL WARN NET/IB : Got completion with error 12\n", "FAILED", "nccl-error"),
        ("NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n", "FAILED", "xid"),
        ("CUDA error: uncorrectable ECC error encountered\n", "FAILED", "ecc"),
        (
            "/var/spool/slurmd/job123/slurm_script: line 9: 4242 Segmentation fault\n",
            None,
            "segfault",
        ),
        (
            "slurmstepd: error: Detected 1 oom_kill event in StepId=12.0\n",
            "OUT_OF_MEMORY",
            "oom-killer",
        ),
        ("step 100\n", "NODE_FAIL", "node-fail"),
        ("step 100\n", "TIMEOUT", "timeout"),
        ("step 100\n", "PREEMPTED", "preempted"),
        ("step 100\n", "OUT_OF_MEMORY", "out-of-memory"),
        (PLAIN_TB, "FAILED", "python-exception"),
    ],
)
def test_signature(text: str, state: str | None, name: str) -> None:
    sig = signatures.match(tail_lines(text, 50), state)
    assert sig is not None and sig.name == name


def test_python_last_line_and_config_first() -> None:
    sig = signatures.match(tail_lines(PLAIN_TB, 50), "FAILED")
    assert sig is not None and sig.label == "FileNotFoundError"
    assert sig.line.startswith("FileNotFoundError: [Errno 2]")
    extra = signatures.compile_extra([("disk-full", "disk full", r"No space left on device")])
    text = "OSError: [Errno 28] No space left on device\n" + CUDA_OOM
    got = signatures.match(tail_lines(text, 50), "FAILED", extra=extra)
    assert got is not None and got.name == "disk-full"
    assert signatures.match(("all good",), "COMPLETED") is None
    shim = signatures.match((), "FAILED", error="ValueError: bad config")
    assert shim is not None and shim.label == "ValueError"


def test_tail_is_bounded_and_trusted(tmp_path) -> None:
    p = tmp_path / "log"
    p.write_text("x" * 100 + "\n" + "line\n" * 10_000 + "last\n")
    os.chmod(p, 0o644)
    text = read_tail(str(p), 4096)
    assert len(text) <= 4096 and text.endswith("last\n") and "x" not in text
    assert tail_lines(text, 3) == ("line", "line", "last")
    os.chmod(p, 0o664)
    with pytest.raises(UntrustedFile):
        read_tail(str(p))
    link = tmp_path / "link"
    link.symlink_to(p)
    with pytest.raises(OSError):
        read_tail(str(link))


def test_attempt_round_trip_and_alert_fields() -> None:
    a = Attempt(
        run="r",
        number=3,
        job_id="88_3",
        restart=1,
        nodes=("n2",),
        started=100.0,
        ended=130.0,
        queued_at=90.0,
        state="FAILED",
        exit_code=1,
        step_start=10,
        step_end=10,
        signature=Signature("cuda-oom", "CUDA out of memory", "torch.OutOfMemoryError: …"),
        log_tail=tuple(f"line {i} " + "y" * 300 for i in range(30)),
        source=Source.RECORDS,
    )
    led = Ledger(run="r", attempts=[a], accounting=False, note="degraded")
    back = Ledger.from_json(led.to_json())
    assert back.attempts[0] == a and back.attempts[0].queue_wait == 10.0
    assert describe.phrase(a) == "attempt 3 (job 88_3 on n2, FAILED exit 1, CUDA out of memory)"
    f = describe.fields(a)
    assert f["nodes"] == "n2" and f["signature"] == "CUDA out of memory"
    assert f["log_tail"].startswith("```\n") and len(f["log_tail"]) <= 2000
