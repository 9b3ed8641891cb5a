"""Issue 37's leftovers: a corrupt checkpoint's root cause names the checkpoint the load read and
the last complete one in its folder (by the checkpoint watchdog's rules, through its scan); the
crash loop and the stall say what every launch died of (the checkpoint, or a node-level fault
on one node). Ledgers built in code, folders on disk."""

from __future__ import annotations

from pathlib import Path

from rtool.core.alert import Status
from rtool.core.heartbeat import Heartbeat, RunState
from rtool.core.slurm import parse_sacct, parse_squeue
from rtool.runs import ckptcause, describe, ledger, signatures
from rtool.runs.config import RunWatch
from rtool.runs.model import Attempt, Ledger
from rtool.runs.render import checkpoint_line, table
from rtool.runs.signatures.base import Signature
from rtool.runs.totals import totals
from rtool.watchdogs.run import RunObservation, check_one

BROKEN = "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central "
BROKEN += "directory"
NOW = 10_000.0


def _folder(tmp_path: Path, sizes: dict[str, int]) -> Path:
    ckpt = tmp_path / "ckpt"
    for name, size in sizes.items():
        (ckpt / name).mkdir(parents=True)
        (ckpt / name / "model.pt").write_bytes(b"x" * size)
    return ckpt


def _signed(read: Path) -> Signature:
    log = [f"loading checkpoint {read}", "Traceback (most recent call last):", BROKEN]
    sig = ckptcause.complete(signatures.match(log, "FAILED"))
    assert sig is not None and sig.name == "corrupt-checkpoint"
    return sig


def test_the_alert_names_the_checkpoint_read_and_the_last_complete_one(tmp_path: Path) -> None:
    ckpt = _folder(tmp_path, {"step_100": 1000, "step_200": 1000, "step_300": 1000})
    sig = _signed(ckpt / "step_300" / "model.pt")  # complete by size, but it does not load
    assert sig.checkpoint == f"{ckpt}/step_300/model.pt"
    assert sig.last_complete == f"{ckpt}/step_200"
    assert sig.action == (
        f"the checkpoint it read ({ckpt}/step_300/model.pt) is damaged or incomplete: resume "
        f"from the last complete one, {ckpt}/step_200, and move the damaged one aside"
    )
    a = Attempt(run="r", number=2, job_id="7", state="FAILED", signature=sig)
    assert describe.fields(a)["action"] == sig.action
    assert checkpoint_line(sig) == (
        f"    ↳ failed to load {ckpt}/step_300/model.pt; last complete checkpoint: {ckpt}/step_200"
    )


def test_an_incomplete_newer_one_is_skipped_by_the_watchdogs_rules(tmp_path: Path) -> None:
    ckpt = _folder(tmp_path, {"step_100": 1000, "step_200": 10, "step_300": 1000})
    sig = _signed(ckpt / "step_300" / "model.pt")
    assert sig.last_complete == f"{ckpt}/step_100"  # step_200 is far smaller: not complete


def test_no_older_complete_one_and_a_folder_that_cannot_be_trusted(tmp_path: Path) -> None:
    ckpt = _folder(tmp_path, {"step_300": 1000})
    sig = _signed(ckpt / "step_300" / "model.pt")
    assert sig.last_complete == ""
    assert f"no older checkpoint in {ckpt} is complete: start over" in sig.action
    assert "none older" in checkpoint_line(sig)
    tmp_path.chmod(0o777)  # others could rename a folder above it: the scan refuses it
    try:
        sig = _signed(ckpt / "step_300" / "model.pt")
    finally:
        tmp_path.chmod(0o755)
    assert sig.last_complete is None and "`rtool watch checkpoint` names it" in sig.action
    assert checkpoint_line(sig).endswith("last complete checkpoint: unknown")


def test_a_relative_or_stepless_path_leaves_the_action_as_it_was() -> None:
    assert ckptcause.where("work_dirs/iter_90000.pth") is None
    assert ckptcause.where("/data/model.pt") is None
    assert ckptcause.where("/c/global_step7/mp_rank_00_model_states.pt") == ("/c", "global_step7")
    assert ckptcause.where("/c/epoch=3-step=1200.ckpt") == ("/c", "epoch=3-step=1200.ckpt")


def test_the_ledger_names_them_from_the_heartbeat_when_the_log_names_no_path(
    tmp_path: Path,
) -> None:
    """`latest_checkpoint` chose step_300 (no `load=` check) and the load died with a bare
    EOFError: the heartbeat's folder and choice name both checkpoints."""
    ckpt = _folder(tmp_path, {"step_100": 1000, "step_200": 1000, "step_300": 1000})
    start = "2026-11-23T14:00:10"
    sacct = f"40|40|FAILED|1:0|n1|2026-11-23T14:00:00|{start}|2026-11-23T14:00:30|20|debug|llm\n"
    hb = Heartbeat(
        state=RunState.CRASHED, time=NOW, run="llm", job_id="40", step=None,
        resumed_from="step_300", checkpoint_folder=str(ckpt),
    )  # fmt: skip
    inp = ledger.Inputs(run="llm", now=NOW, sacct=parse_sacct(sacct), heartbeat=hb)
    log = ("Traceback (most recent call last):", "EOFError: Ran out of input")
    led = ledger.build(None, inp, lambda a: ("log", log))
    sig = led.attempts[0].signature
    assert sig is not None and sig.name == "corrupt-checkpoint"
    assert sig.checkpoint == f"{ckpt}/step_300" and sig.last_complete == f"{ckpt}/step_200"
    assert sig.action.startswith(f"the checkpoint it read ({ckpt}/step_300) is damaged")
    page = table(led, totals(led, NOW), NOW)
    assert f"↳ failed to load {ckpt}/step_300; last complete checkpoint: {ckpt}/step_200" in page


def _att(n: int, sig: Signature, node: str = "n1") -> Attempt:
    return Attempt(
        run="llm", number=n, job_id=f"50_{n - 1}", nodes=(node,), started=1000.0 * n,
        ended=1000.0 * n + 30, state="FAILED", exit_code=1, step_start=200, step_end=200,
        signature=sig,
    )  # fmt: skip


def _summary(attempts: list[Attempt], **spec: object) -> str:
    led = Ledger(run="llm", attempts=attempts)
    res = check_one(RunObservation(RunWatch(name="llm", **spec), led, parse_squeue("")), NOW)  # type: ignore[arg-type]
    assert res.status is Status.CRITICAL
    return res.summary


def test_a_crash_loop_on_one_checkpoint_says_every_launch_dies_loading_it() -> None:
    sig = Signature("corrupt-checkpoint", "corrupt or truncated checkpoint", BROKEN,
                    checkpoint="/c/step_300/model.pt", last_complete="/c/step_200")  # fmt: skip
    text = _summary([_att(n, sig) for n in (1, 2, 3)], crash_loop=3)
    assert text.startswith(
        "llm crash loop: attempts 1-3 made no progress or died early; every launch dies loading "
        "/c/step_300/model.pt (last complete: /c/step_200); last attempt 3"
    )


def test_a_node_level_cause_on_one_node_names_the_node_and_not_on_several() -> None:
    xid = Signature("xid", "GPU Xid error", "NVRM: Xid (PCI:0000:3b:00): 79", node="n3")
    text = _summary([_att(n, xid, "n3") for n in (1, 2, 3)])
    assert "; every launch died of GPU Xid error on node n3; last attempt 3" in text
    moved = [_att(1, xid, "n3"), _att(2, Signature("xid", "GPU Xid error", "x", node="n4"), "n4")]
    text = _summary([*moved, _att(3, xid, "n3")])
    assert "; every launch died of GPU Xid error; last attempt 3" in text
    oom = Signature("cuda-oom", "CUDA out of memory", "torch.OutOfMemoryError", node="n3")
    assert "; every launch died of CUDA out of memory; last" in _summary(
        [_att(n, oom, "n3") for n in (1, 2, 3)]
    )


def test_the_stall_says_what_every_launch_died_of() -> None:
    sig = Signature("corrupt-checkpoint", "corrupt or truncated checkpoint", BROKEN,
                    checkpoint="/c/step_300/model.pt")  # fmt: skip
    text = _summary([_att(n, sig) for n in (1, 2, 3)], crash_loop=9, no_progress=3)
    assert "stalled: 3 launches in a row resumed at step 200" in text
    assert (
        "(attempt 1, attempt 2, attempt 3); every launch dies loading /c/step_300/model.pt;" in text
    )
