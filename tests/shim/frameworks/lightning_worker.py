"""Attempts of a tiny Lightning run (one linear layer, random data, CPU) under rtool's callback.
Run by test_frameworks.py: `lightning_worker.py OUT ATTEMPTS_JSON`; see common.py. With
SLURM_NTASKS=2 set (two processes started as srun would), Lightning picks its SLURMEnvironment
(auto_requeue on, its default) and runs DDP over gloo. Exits with the last attempt's code."""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import lightning as L
import torch
from lightning.pytorch.loggers.logger import Logger
from torch.utils.data import DataLoader, TensorDataset

from rtool.core.ckptscan import step_of
from rtool.shim.integrations.lightning import RtoolCallback, last_checkpoint
from tests.shim.frameworks.common import (
    ATTEMPTS,
    OUT,
    break_newest,
    fire,
    nan_due,
    peek,
    prepare,
    record,
)

RANK = int(os.environ.get("SLURM_PROCID", "0"))
WORLD = int(os.environ.get("SLURM_NTASKS", "1"))


class Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)
        self.poison = False

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        return loss * float("nan") if self.poison else loss

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self) -> Any:
        g = torch.Generator().manual_seed(0)
        data = TensorDataset(torch.randn(128, 8, generator=g), torch.randn(128, 1, generator=g))
        return DataLoader(data, batch_size=4)


class Probe(L.Callback):
    """Triggers at the start of a step; records what ran (placed after rtool's callback)."""

    def __init__(self, attempt: dict[str, Any], rtool: RtoolCallback, result: dict[str, Any]):
        self.attempt, self.rtool, self.result = attempt, rtool, result

    def on_train_batch_start(self, trainer: Any, module: Any, batch: Any, idx: int) -> None:
        fire(self.attempt, trainer.global_step + 1, RANK)
        peek(self.attempt, trainer.global_step + 1, self.result)
        module.poison = nan_due(self.attempt, trainer.global_step + 1)

    def on_train_batch_end(self, trainer: Any, module: Any, *args: Any) -> None:
        self.result["steps"].append([trainer.global_step, self.rtool.update_skipped])

    def on_save_checkpoint(self, trainer: Any, module: Any, checkpoint: Any) -> None:
        self.result["saves"].append(trainer.global_step)

    def on_train_end(self, trainer: Any, module: Any) -> None:
        self.result["after_rtool_on_train_end"] = True


class Recorder(Logger):
    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__()
        self.result = result

    @property
    def name(self) -> str:
        return "recorder"

    @property
    def version(self) -> str:
        return "0"

    def log_metrics(self, metrics: Any, step: Any = None) -> None:
        pass

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass

    def finalize(self, status: str) -> None:
        self.result["logger_status"] = status


def main() -> int:
    ckpt = OUT / "rtool-last.ckpt"
    results: list[dict[str, Any]] = []
    code = 0
    for attempt in ATTEMPTS:
        files = OUT / "ckpts"  # with `step_files`: one file per save, rtool's last_checkpoint
        if RANK == 0:
            prepare(attempt)
            newest = max(files.glob("*.ckpt"), key=lambda p: step_of(p.name), default=None)
            break_newest(attempt, newest, None)
        result: dict[str, Any] = {"steps": [], "saves": []}
        results.append(result)
        torch.manual_seed(0)
        model = Tiny()
        each = attempt.get("step_files")
        rtool = RtoolCallback(files / "rtool-step={step}.ckpt" if each else ckpt)
        trainer = L.Trainer(
            max_steps=attempt["max_steps"],
            accelerator="cpu",
            devices=WORLD,
            strategy="ddp" if WORLD > 1 else "auto",
            callbacks=[rtool, Probe(attempt, rtool, result)],
            logger=Recorder(result),
            default_root_dir=str(OUT / "pl"),
            enable_progress_bar=False,
            enable_model_summary=False,
            num_sanity_val_steps=0,
        )
        resume = last_checkpoint(files) if each else (str(ckpt) if ckpt.exists() else None)
        trainer.fit(model, ckpt_path=resume)
        result["returned"] = True
        result["exit_code"] = code = rtool.exit_code
        finite = [math.isfinite(float(p.detach().abs().sum())) for p in model.parameters()]
        result["weights_finite"] = all(finite)
        result["own_checkpoints"] = sorted(p.name for p in (OUT / "pl").rglob("*.ckpt"))
        env = getattr(trainer.strategy, "cluster_environment", None)
        result["auto_requeue"] = getattr(env, "auto_requeue", None)
        record(RANK, results)
    return code


if __name__ == "__main__":
    sys.exit(main())
