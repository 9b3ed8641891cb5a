"""Attempts of a plain torch.distributed loop and of an Accelerate loop (2 gloo ranks under
torchrun, CPU) with rtool's Guard. Run by test_frameworks.py: `torch_worker.py OUT ATTEMPTS`;
an attempt's "loop" is "torch" (DDP, torch.save by rank 0) or "accelerate" (prepare,
save_state / load_state). See common.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from rtool.shim import Guard
from tests.shim.frameworks.common import ATTEMPTS, OUT, fire, nan_due, prepare, record


def batch(step: int, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(step * 10 + rank)
    return torch.randn(4, 8, generator=g), torch.randn(4, 1, generator=g)


class Loop:
    """One attempt: resume, train to max_steps under the guard, report."""

    def __init__(self, attempt: dict[str, Any], rank: int) -> None:
        self.attempt, self.rank = attempt, rank
        self.kind = attempt.get("loop", "torch")
        self.dir = OUT / self.kind
        self.dir.mkdir(exist_ok=True)
        torch.manual_seed(0)
        self.model: Any = torch.nn.Linear(8, 1)
        self.opt: Any = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.acc: Any = None
        if self.kind == "accelerate":
            from accelerate import Accelerator

            self.acc = Accelerator(cpu=True)
            self.model, self.opt = self.acc.prepare(self.model, self.opt)
        else:
            self.model = torch.nn.parallel.DistributedDataParallel(self.model)

    def resume(self) -> int:
        meta = self.dir / "step.json"
        if not meta.exists():
            return 1
        if self.acc is not None:
            self.acc.load_state(str(self.dir / "state"))
        else:
            state = torch.load(self.dir / "ckpt.pt")
            self.model.load_state_dict(state["model"])
            self.opt.load_state_dict(state["opt"])
        return int(json.loads(meta.read_text())["step"]) + 1

    def save(self, step: int) -> None:
        """Called by the guard on every rank, at the same step."""
        if self.acc is not None:
            self.acc.save_state(str(self.dir / "state"))
        elif self.rank == 0:
            state = {"model": self.model.state_dict(), "opt": self.opt.state_dict()}
            torch.save(state, self.dir / "ckpt.pt")
        dist.barrier()
        if self.rank == 0:
            (self.dir / "step.json").write_text(json.dumps({"step": step}))
        dist.barrier()

    def run(self, result: dict[str, Any]) -> int:
        guard = Guard.from_env(self.save, exit=False)
        try:
            return self._train(guard, result)
        finally:
            guard.close()

    def _train(self, guard: Guard, result: dict[str, Any]) -> int:
        if guard.stop_if_killed():  # burn-through: not a step
            return guard.exit_code
        step = self.resume()
        while step <= self.attempt["max_steps"]:
            fire(self.attempt, step, self.rank)
            x, y = batch(step, self.rank)
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            if nan_due(self.attempt, step):
                loss = loss * float("nan")
            if self.acc is not None:
                self.acc.backward(loss)
            else:
                loss.backward()
            good = guard.check_loss(loss.item())  # NaN/Inf: the update is dropped
            if good:
                self.opt.step()
            self.opt.zero_grad()
            result["steps"].append([step, not good])
            if guard.step(step).stopping:
                return guard.exit_code
            step += 1
        guard.finished(step - 1)
        return guard.exit_code


def main() -> int:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    results: list[dict[str, Any]] = []
    code = 0
    for attempt in ATTEMPTS:
        if rank == 0:
            prepare(attempt)
        dist.barrier()
        result: dict[str, Any] = {"steps": []}
        results.append(result)
        result["exit_code"] = code = Loop(attempt, rank).run(result)
        meta = OUT / attempt.get("loop", "torch") / "step.json"
        result["saved_step"] = json.loads(meta.read_text())["step"] if meta.exists() else None
        result["saved_files"] = sorted(p.name for p in Path(meta.parent).iterdir())
        record(rank, results)
        dist.barrier()
    dist.destroy_process_group()
    return code


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
