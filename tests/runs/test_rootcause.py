"""The root cause over an attempt's log (issue 37): the most specific, earliest match across
ranks, who printed it, the per-task logs, the node blamed, the actions, the crash loop on the
same cause whatever the follower lines."""

from __future__ import annotations

import os
from pathlib import Path

from rtool.nodes.node_fault import blamed
from rtool.runs import health, signatures
from rtool.runs.logtail import expand, read_logs, shown
from rtool.runs.model import Attempt, Ledger
from rtool.runs.signatures.base import Signature

TWO = ("n1", "n2")
NCCL_WAIT = (
    "[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600061 milliseconds before timing out."
)


def test_the_first_failure_is_the_cause_and_the_waiting_ranks_are_symptoms() -> None:
    log = [
        "0: step 100 loss 2.1",
        "1: [rank1]: Traceback (most recent call last):",
        '1: [rank1]:   File "train.py", line 40, in <module>',
        "1: [rank1]: ValueError: bad batch at step 101",
        "0: [rank0]: Traceback (most recent call last):",
        "0: [rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
        "Connection closed by peer [10.0.0.2]:41234",
        "0: " + NCCL_WAIT,
        "srun: error: n2: task 1: Exited with exit code 1",
    ]
    sig = signatures.match(log, "FAILED", nodes=TWO)
    assert sig is not None and sig.name == "python-exception"
    assert sig.label == "ValueError" and sig.rank == 1 and sig.node == "n2"
    # the waiting rank's timeout alone is named, but blames nobody
    alone = signatures.match(["0: " + NCCL_WAIT], "FAILED", nodes=TWO)
    assert alone is not None and alone.name == "nccl-timeout" and alone.rank == 0
    assert blamed(TWO, alone.name, alone.line, alone.node) == []


def test_a_root_cause_beats_a_first_sign_beats_a_symptom_and_slurm_states() -> None:
    xid = "Nov 23 14:00:00 n2 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off"
    log = [NCCL_WAIT, "n1:1:2 [0] NCCL WARN NET/IB : Got completion from peer x with error 12", xid]
    sig = signatures.match(log, "NODE_FAIL", nodes=TWO)
    assert sig is not None and sig.name == "xid" and sig.node == "n2"
    assert blamed(TWO, sig.name, sig.line, sig.node) == ["n2"]
    # a symptom yields to Slurm's own final state
    state = signatures.match([NCCL_WAIT], "NODE_FAIL", nodes=TWO)
    assert state is not None and state.name == "node-fail"
    # by timestamp when every candidate has one, not by position
    late = "[2026-11-23 14:05:00,000] RuntimeError: CUDA error: an illegal memory access was seen"
    late = late.replace("was seen", "was encountered")
    early = "[2026-11-23 14:00:00,000] OSError: [Errno 28] No space left on device: '/scratch/c.pt'"
    first = signatures.match([late, early], "FAILED")
    assert first is not None and first.name == "disk-full"


def test_actions_name_the_path_and_the_port() -> None:
    disk = signatures.match(["OSError: [Errno 28] No space left on device: '/scratch/r/c.pt'"])
    assert (
        disk is not None and "/scratch/r/c.pt" in disk.action and "rtool watch disk" in disk.action
    )
    port = signatures.match(
        [
            "[W socket.cpp:401] [c10d] The server socket has failed to bind to 0.0.0.0:47531 "
            "(errno: 98 - Address already in use)."
        ]
    )
    assert port is not None and "port 47531" in port.action
    fault = signatures.match(["RuntimeError: CUDA error: an illegal memory access was encountered"])
    assert fault is not None and "code or GPU" in fault.action and "same node" in fault.action
    quota = signatures.match(["OSError: [Errno 122] Disk quota exceeded"])
    assert quota is not None and "quota" in quota.action
    ckpt = signatures.match(
        [
            "RuntimeError: PytorchStreamReader failed reading zip archive: "
            "failed finding central directory"
        ]
    )
    assert ckpt is not None and "last complete" in ckpt.action


def test_prefixed_tracebacks_cpp_what_and_the_torchrun_summary() -> None:
    tb = [
        "2026-11-23 14:00:00 [rank3]: Traceback (most recent call last):",
        "[rank3]: KeyError: 'labels'",
    ]
    sig = signatures.match(tb, "FAILED", nodes=TWO)
    assert sig is not None and sig.label == "KeyError" and sig.rank == 3
    what = signatures.match(
        [
            "terminate called after throwing an instance of 'std::bad_alloc'",
            "  what():  std::bad_alloc",
        ],
        "FAILED",
    )
    assert what is not None and what.label == "C++ exception"
    summary = [
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2024-12-31_16:45:52",
        "  host      : n2",
        "  rank      : 1 (local_rank: 0)",
        "  exitcode  : -11 (pid: 467397)",
        "  traceback : Signal 11 (SIGSEGV) received by PID 467397",
    ]
    seg = signatures.match(summary, "FAILED", nodes=TWO)
    assert seg is not None and seg.name == "segfault" and (seg.rank, seg.node) == (1, "n2")


def test_per_task_logs_are_read_and_name_the_task_and_node(tmp_path: Path) -> None:
    for task, text in (
        (0, f"step 5\n{NCCL_WAIT}\n"),
        (1, "step 5\nRuntimeError: CUDA error: uncorrectable ECC error encountered\n"),
    ):
        p = tmp_path / f"run-88-{task}.out"
        p.write_text(text)
        os.chmod(p, 0o600)
    (tmp_path / "run-88-x.out").write_text("not a task\n")
    pattern = str(tmp_path / "run-88-%t.out")
    assert [t for _, t, _ in expand(pattern, TWO)] == [0, 1]
    got = read_logs(pattern, TWO, 1 << 20)
    assert got is not None and got[0] == pattern
    sig = signatures.match(got[1], "FAILED", nodes=TWO)
    assert sig is not None and sig.name == "ecc" and sig.rank == 1 and sig.node == "n2"
    assert blamed(TWO, sig.name, sig.line, sig.node) == ["n2"]
    assert all(not ln.startswith("==> ") for ln in shown(got[1]))


def test_the_tail_is_long_and_lines_are_wide(tmp_path: Path) -> None:
    """The failure line is 40 lines before the end and pushed past 200 characters by a
    progress bar: still found."""
    bar = "Epoch 0:   6%|" + "█" * 300 + "| 32040/500150 [6:28:43<94:39:17,  1.37it/s]"
    p = tmp_path / "log"
    p.write_text("\n".join([*["step"] * 3000, bar + NCCL_WAIT, *["  frame #3: x"] * 40]) + "\n")
    os.chmod(p, 0o600)
    got = read_logs(str(p), ("n1",), 1 << 20)
    assert got is not None
    sig = signatures.match(got[1], "FAILED", nodes=("n1",))
    assert sig is not None and sig.name == "nccl-timeout"
    assert len(shown(got[1])) == 12 and all(len(x) <= 200 for x in shown(got[1]))


def _attempt(n: int, sig: Signature | None, progress: int) -> Attempt:
    return Attempt(
        run="r",
        number=n,
        job_id=str(n),
        state="FAILED",
        started=1000.0 * n,
        ended=1000.0 * n + 900,
        step_start=0,
        step_end=progress,
        signature=sig,
    )


def test_three_launches_dying_of_the_same_cause_are_a_crash_loop() -> None:
    """Each made progress (so none is 'bad'), each printed different follower lines."""
    lines = ["[rank1]: ValueError: x", "[rank0]: ValueError: y", "ValueError: z"]
    sigs = [Signature("python-exception", "ValueError", line) for line in lines]
    led = Ledger(run="r", attempts=[_attempt(i + 1, s, 50) for i, s in enumerate(sigs)])
    loop = health.crash_loop(led, 3, 300)
    assert loop is not None and [t.number for t in loop] == [1, 2, 3]
    other = [*sigs[:2], Signature("python-exception", "KeyError", "KeyError: 'a'")]
    assert (
        health.crash_loop(
            Ledger(run="r", attempts=[_attempt(i + 1, s, 50) for i, s in enumerate(other)]), 3, 300
        )
        is None
    )
    limits = [Signature("timeout", "time limit")] * 3
    assert (
        health.crash_loop(
            Ledger(run="r", attempts=[_attempt(i + 1, s, 50) for i, s in enumerate(limits)]), 3, 300
        )
        is None
    )


def test_a_hang_is_the_rank_whose_stacks_are_not_in_a_collective() -> None:
    """Rank 1 (left waiting in the backward's allreduce) fired first and wrote the abort file;
    rank 0 (stuck in its own code) ended with it: the hang is rank 0's."""
    log = [
        "1: rtool.shim: HUNG at step 20: no step for 4.1s after step 20 (hang_after 4s); the "
        "stacks of all threads:",
        "1: Thread 0x00007f2e93fff640 (most recent call first):",
        '1:   File "/v/lib/python3.11/site-packages/torch/autograd/graph.py", line 829 in '
        "_engine_run_backward",
        '1:   File "/w/ddp_toy.py", line 97 in main',
        "0: rtool.shim: PEER_FAILED at step 20: rank 1 on n2 hung: no step for 4.1s after step "
        "20 (hang_after 4s); this rank ended with it; the stacks of all threads:",
        "0: Thread 0x00007f2e93fff640 (most recent call first):",
        '0:   File "/w/ddp_toy.py", line 50 in fault',
        '0:   File "/w/ddp_toy.py", line 93 in main',
    ]
    sig = signatures.match(log, "FAILED", nodes=TWO)
    assert sig is not None and sig.name == "hang" and (sig.rank, sig.node) == (0, "n1"), sig
    # without the stacks nothing tells them apart: the shim that fired names it
    bare = signatures.match([log[0], log[4]], "FAILED", nodes=TWO)
    assert bare is not None and bare.name == "hang" and bare.rank == 1


def test_the_alert_says_who_printed_the_cause_and_what_to_do() -> None:
    from rtool.runs import describe

    sig = Signature("disk-full", "disk full", "OSError: …", 3, "n2", "free space on /scratch")
    a = Attempt(run="r", number=2, job_id="9", nodes=TWO, state="FAILED", exit_code=1)
    assert describe.phrase(a.with_(signature=sig)).endswith("disk full on rank 3 (n2))")
    f = describe.fields(a.with_(signature=sig))
    assert f["signature"] == "disk full on rank 3 (n2)" and f["action"] == "free space on /scratch"
    one = a.with_(nodes=("n2",), signature=sig)  # one node: the nodes field says it already
    assert describe.fields(one)["signature"] == "disk full on rank 3"


def test_a_corrupt_checkpoint_is_named_from_the_lines_before_it() -> None:
    log = [  # mmagic issue 876's log, as printed
        "load checkpoint from local path: work_dirs/formal_basicvsr_plusplus_360new_cb/"
        "iter_90000.pth",
        "Traceback (most recent call last):",
        r'  File "D:\Anaconda3\envs\pytorch\lib\site-packages\torch\serialization.py", '
        "line 600, in load",
        "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central "
        "directory",
    ]
    sig = signatures.match(log, "FAILED")
    assert sig is not None and sig.name == "corrupt-checkpoint"
    assert "(work_dirs/formal_basicvsr_plusplus_360new_cb/iter_90000.pth)" in sig.action
    assert "last complete" in sig.action
