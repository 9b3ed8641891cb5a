"""Real checkpoints of the real frameworks on CPU, for the checkpoint watchdog's layout test.

    python ckpt_frameworks.py OUT

OUT/hf: a Hugging Face Trainer (1-layer GPT-2, random tokens) saving every 2 of 6 steps
(`checkpoint-2/`, `-4/`, `-6/`); OUT/pl: Lightning's ModelCheckpoint every 2 of 6 steps, all
kept (`epoch=0-step=2.ckpt` ...).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


def hf(out: Path) -> None:
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=1, n_head=2)
    ids = torch.randint(0, 64, (32, 16), generator=torch.Generator().manual_seed(0))
    args = TrainingArguments(
        output_dir=str(out),
        max_steps=6,
        per_device_train_batch_size=4,
        save_strategy="steps",
        save_steps=2,
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
    )
    data = [{"input_ids": x, "labels": x} for x in ids]
    Trainer(model=GPT2LMHeadModel(cfg), args=args, train_dataset=data).train()


class Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def lightning(out: Path) -> None:
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(64, 8, generator=g), torch.randn(64, 1, generator=g))
    every = ModelCheckpoint(dirpath=str(out), every_n_train_steps=2, save_top_k=-1)
    trainer = L.Trainer(
        max_steps=6,
        accelerator="cpu",
        callbacks=[every],
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(out.parent),
    )
    trainer.fit(Tiny(), DataLoader(data, batch_size=4))


if __name__ == "__main__":
    root = Path(sys.argv[1])
    hf(root / "hf")
    lightning(root / "pl")
