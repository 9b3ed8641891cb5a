"""A toy DDP training (torch, CPU, gloo) guarded by rtool.shim; run under torchrun by
test_multinode.py, one process per node.

Env: DDP_DIR (shared folder), DDP_STEPS, DDP_STEP_SECONDS, DDP_CKPT_EVERY. A file
DDP_DIR/crash-R (hang-R) makes rank R raise (hang) at its next step, once (it is removed).
Every rank appends `step=N rank=R node=NODE job=JOBID task=TASK restart=K launch=L t=TIME` to
steps-<rank>.log after each step; saves append `saved=N rank=R ... reason=...` to saves.log
(rank 0 writes the checkpoint ckpt.pt atomically); a time-limit signal is logged as
`signal=USR1 rank=R node=NODE` in signals.log when the rank's own handler receives it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import torch
import torch.distributed as dist

from rtool.shim import Guard

OUT = Path(os.environ["DDP_DIR"])
STEPS = int(os.environ["DDP_STEPS"])
STEP_SECONDS = float(os.environ.get("DDP_STEP_SECONDS", "0.1"))
CKPT_EVERY = int(os.environ.get("DDP_CKPT_EVERY", "20"))
NODE = os.environ.get("SLURMD_NODENAME", "?")
WHO = (
    f"node={NODE} job={os.environ.get('SLURM_JOB_ID')} "
    f"task={os.environ.get('SLURM_ARRAY_TASK_ID')} "
    f"restart={os.environ.get('SLURM_RESTART_COUNT', '0')} "
    f"launch={os.environ.get('RTOOL_LAUNCH', '0')}"
)


def fault(rank: int, step: int) -> None:
    """DDP_DIR/crash-RANK: raise; DDP_DIR/hang-RANK: hang (each once: the file is removed)."""
    for kind in ("crash", "hang"):
        path = OUT / f"{kind}-{rank}"
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        print(f"rank {rank}: {kind} at step {step}", flush=True)
        if kind == "crash":
            raise RuntimeError(f"rank {rank} crashed on demand at step {step}")
        while True:
            time.sleep(3600)


def log(name: str, line: str) -> None:
    with (OUT / name).open("a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    ckpt = OUT / "ckpt.pt"
    start = 0
    if ckpt.exists():
        state = torch.load(ckpt)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = int(state["step"]) + 1

    def save(step: int, reason: str = "stop") -> None:
        if rank == 0:
            tmp = OUT / "ckpt.pt.tmp"
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, tmp)
            os.replace(tmp, ckpt)
        log("saves.log", f"saved={step} rank={rank} {WHO} reason={reason}")

    guard = Guard.from_env(save=save)
    shim_handler = signal.getsignal(signal.SIGUSR1)

    def on_usr1(signum: int, frame: object) -> None:
        log("signals.log", f"signal=USR1 rank={rank} {WHO} t={time.time():.3f}")
        if callable(shim_handler):
            shim_handler(signum, frame)

    signal.signal(signal.SIGUSR1, on_usr1)
    guard.exit_if_killed()
    gen = torch.Generator().manual_seed(rank)
    for step in range(start, STEPS):
        fault(rank, step)
        x = torch.randn(32, 8, generator=gen)
        loss = (ddp(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(STEP_SECONDS)
        log(f"steps-{rank}.log", f"step={step} rank={rank} {WHO} t={time.time():.3f}")
        if step % CKPT_EVERY == CKPT_EVERY - 1:
            save(step, "periodic")
            guard.mark_saved(step)
        guard.step(step)
    guard.finished(STEPS - 1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
