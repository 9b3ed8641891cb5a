"""Attempts of a tiny Hugging Face Trainer run (1-layer GPT-2, random tokens, CPU) under
rtool's callback. Run by test_frameworks.py: `hf_worker.py OUT ATTEMPTS_JSON`; see common.py.
Checkpoints: OUT/hf/checkpoint-N (the Trainer's own), resumed from with rtool's last_checkpoint;
exits with the last attempt's code."""

from __future__ import annotations

import math
import sys
from typing import Any

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

from rtool.core.ckptscan import step_of
from rtool.shim.integrations.hf import RtoolCallback, last_checkpoint
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


class Probe(TrainerCallback):  # type: ignore[misc]
    """Triggers at the start of a step; records what ran (placed after rtool's callback)."""

    def __init__(self, attempt: dict[str, Any], rtool: RtoolCallback, result: dict[str, Any]):
        self.attempt, self.rtool, self.result = attempt, rtool, result

    def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        fire(self.attempt, state.global_step + 1)
        peek(self.attempt, state.global_step + 1, self.result)
        self.result["nan"] = nan_due(self.attempt, state.global_step + 1)

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.result["steps"].append([state.global_step, self.rtool.update_skipped])

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.result["after_rtool_on_train_end"] = True


def data(n: int = 64) -> list[dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 64, (n, 16), generator=g)
    return [{"input_ids": x, "labels": x} for x in ids]


def main() -> int:
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=1, n_head=2)
    out_dir = OUT / "hf"
    results: list[dict[str, Any]] = []
    code = 0
    for attempt in ATTEMPTS:
        prepare(attempt)
        newest = max(out_dir.glob("checkpoint-*[0-9]"), key=lambda p: step_of(p.name), default=None)
        if newest is not None:
            break_newest(attempt, newest / "model.safetensors", newest / "trainer_state.json")
        result: dict[str, Any] = {"steps": [], "nan": False}
        results.append(result)
        model = GPT2LMHeadModel(cfg)

        def poison(module: Any, args: Any, output: Any, result: dict[str, Any] = result) -> Any:
            if result["nan"] and module.training:
                output["loss"] = output["loss"] * float("nan")
            return output

        model.register_forward_hook(poison)  # before rtool's hook: rtool sees the NaN loss
        args = TrainingArguments(
            output_dir=str(out_dir),
            max_steps=attempt["max_steps"],
            per_device_train_batch_size=4,
            save_strategy="steps",
            save_steps=attempt.get("save_steps", 1000),
            logging_steps=1,
            report_to="none",
            use_cpu=True,
            disable_tqdm=True,
            learning_rate=1e-3,
        )
        rtool = RtoolCallback()
        trainer = Trainer(model=model, args=args, train_dataset=data(), callbacks=[rtool])
        trainer.add_callback(Probe(attempt, rtool, result))
        trainer.train(resume_from_checkpoint=last_checkpoint(out_dir))
        result["returned"] = True
        result["exit_code"] = code = rtool.exit_code
        result["weights_finite"] = all(
            math.isfinite(float(p.detach().abs().sum())) for p in model.parameters()
        )
        result["checkpoints"] = sorted(p.name for p in out_dir.glob("checkpoint-*"))
        record(0, results)
    return code


if __name__ == "__main__":
    sys.exit(main())
