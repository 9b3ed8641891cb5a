#!/usr/bin/env python3
"""A toy training run guarded by rtool.shim: pure Python, for the demo and end-to-end tests.

    python examples/train_toy.py --steps 300 --step-seconds 0.2 --dir run/

Each step sleeps `--step-seconds`, prints `step N loss X` and appends one line to the steps log
(`step=N job=<SLURM_JOB_ID> task=<SLURM_ARRAY_TASK_ID> pid=<pid>`), so a test can check that the
union of all runs' steps is exactly 0..N-1 with none run twice. The checkpoint is a JSON file
`{"step": last completed step, "value": ...}`; a run resumes at step + 1.

Every option has an environment twin (TOY_STEPS, TOY_STEP_SECONDS, TOY_DIR, TOY_CHECKPOINT,
TOY_STEPS_LOG, TOY_SAVE_SECONDS, TOY_HANG_AT, TOY_NAN_AT, TOY_HANG_FILE, TOY_SAVE_EVERY,
TOY_CRASH_FILE, TOY_CRASH_AT, TOY_CKPT_FOLDERS); the guard reads RTOOL_* (see docs/shim.md).
--hang-at K: stop writing anything at step K and sleep forever (a hung run).
--nan-at K: the loss is NaN from step K on (the guard stops after RTOOL_MAX_NONFINITE of them).
--hang-file PATH: when PATH appears, remove it and hang like --hang-at (a hang on demand, once).
--save-every K: also save after every K-th step (reported to the guard: guard.mark_saved).
--crash-file PATH: when PATH appears, remove it, print what it holds and raise (a crash, once).
--crash-at K: raise at step K, every run (a crash no restart gets past).
--ckpt-folders DIR: save into DIR/step_NNNNNN/ (state.json, written in two halves
`--save-seconds` apart, then the marker COMPLETE) and resume from the newest complete one that
loads (rtool.shim.latest_checkpoint: a half-written one is set aside).
--config PATH: a config file (read by nobody; the ledger records its hash). --import NAME:
import that module first (a library the training uses; the ledger records its version).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

try:
    from rtool.shim import Guard, latest_checkpoint
except ImportError:  # run from a checkout without installing rtool
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from rtool.shim import Guard, latest_checkpoint


def _env(name: str, default: str | None) -> str | None:
    return os.environ.get(name, default)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1] if __doc__ else None)
    p.add_argument("--steps", type=int, default=int(_env("TOY_STEPS", "100") or 100))
    p.add_argument(
        "--step-seconds", type=float, default=float(_env("TOY_STEP_SECONDS", "0.2") or 0.2)
    )
    p.add_argument("--dir", default=_env("TOY_DIR", "."), help="checkpoint and log folder")
    p.add_argument("--checkpoint", default=_env("TOY_CHECKPOINT", None))
    p.add_argument("--steps-log", default=_env("TOY_STEPS_LOG", None))
    p.add_argument("--save-seconds", type=float, default=float(_env("TOY_SAVE_SECONDS", "0") or 0))
    p.add_argument("--hang-at", type=int, default=_int(_env("TOY_HANG_AT", None)))
    p.add_argument("--nan-at", type=int, default=_int(_env("TOY_NAN_AT", None)))
    p.add_argument("--hang-file", default=_env("TOY_HANG_FILE", None))
    p.add_argument("--save-every", type=int, default=_int(_env("TOY_SAVE_EVERY", None)))
    p.add_argument("--crash-file", default=_env("TOY_CRASH_FILE", None))
    p.add_argument("--crash-at", type=int, default=_int(_env("TOY_CRASH_AT", None)))
    p.add_argument("--ckpt-folders", default=_env("TOY_CKPT_FOLDERS", None))
    p.add_argument("--config", default=None)
    p.add_argument("--import", dest="imports", action="append", default=[])
    return p.parse_args(argv)


def _int(text: str | None) -> int | None:
    return int(text) if text not in (None, "") else None


def _take(path: str | None) -> bool:
    """True once when the hang file exists (it is removed: the next run does not hang)."""
    if not path:
        return False
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def _crash(path: str | None, at: int | None, step: int) -> None:
    """Raise when the crash file appears (printing what it holds first) or at step `at`."""
    if path and os.path.exists(path):
        try:
            text = Path(path).read_text()[:2000]
            os.unlink(path)
        except OSError:
            return
        print(text, file=sys.stderr, flush=True)
        raise RuntimeError(f"crash on demand at step {step}")
    if at is not None and step == at:
        raise RuntimeError(f"crash at step {step}")


def load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {"step": -1, "value": 0}
    return {"step": int(data["step"]), "value": int(data["value"])}


MARKER = "{NAME}/COMPLETE"


def _state_of(folder: Path) -> dict[str, Any]:
    data = json.loads((folder / "state.json").read_text())
    return {"step": int(data["step"]), "value": int(data["value"])}


def load_folders(top: Path) -> dict[str, Any]:
    """The state in the newest complete checkpoint folder that loads (none: the start)."""
    found = latest_checkpoint(top, marker=MARKER, load=_state_of)
    print(f"resuming from {found.name if found else 'the start'}", flush=True)
    return _state_of(found) if found is not None else {"step": -1, "value": 0}


def save_folder(top: Path, data: dict[str, Any], seconds: float) -> None:
    """step_NNNNNN/state.json in two halves `seconds` apart (a slow save), then COMPLETE."""
    folder = top / f"step_{data['step']:06d}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "COMPLETE").unlink(missing_ok=True)
    text = json.dumps(data)
    with (folder / "state.json").open("w") as f:
        f.write(text[: len(text) // 2])
        f.flush()
        time.sleep(seconds)
        f.write(text[len(text) // 2 :])
    (folder / "COMPLETE").write_text("")


def write_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    for name in args.imports:
        importlib.import_module(name)
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    ckpt = Path(args.checkpoint) if args.checkpoint else folder / "checkpoint.json"
    steps_log = Path(args.steps_log) if args.steps_log else folder / "steps.log"
    top = Path(args.ckpt_folders) if args.ckpt_folders else None
    state = load_folders(top) if top is not None else load(ckpt)
    ident = (
        f"job={os.environ.get('SLURM_JOB_ID', '-')} "
        f"task={os.environ.get('SLURM_ARRAY_TASK_ID', '-')} pid={os.getpid()}"
    )

    def save(step: int) -> None:
        data = {"step": step, "value": state["value"], "saved_by": ident}
        if top is not None:
            save_folder(top, data, args.save_seconds)
        else:
            time.sleep(args.save_seconds)
            write_atomic(ckpt, data)
        print(f"saved step {step}", flush=True)

    guard = Guard.from_env(save=save)
    guard.exit_if_killed()
    start = state["step"] + 1
    print(f"starting at step {start} of {args.steps} ({ident})", flush=True)
    with steps_log.open("a", buffering=1) as log:
        for step in range(start, args.steps):
            if (args.hang_at is not None and step == args.hang_at) or _take(args.hang_file):
                print(f"hanging at step {step}", flush=True)
                while True:
                    time.sleep(3600)
            _crash(args.crash_file, args.crash_at, step)
            time.sleep(args.step_seconds)
            loss = math.nan if args.nan_at is not None and step >= args.nan_at else 1 / (step + 1)
            log.write(f"step={step} {ident}\n")
            print(f"step {step} loss {loss:.4g}", flush=True)
            if guard.check_loss(loss):
                state["value"] += step
            if args.save_every and (step + 1) % args.save_every == 0:
                t0 = time.monotonic()
                save(step)
                guard.mark_saved(step, time.monotonic() - t0)
            guard.step(step)
    if start < args.steps:
        save(args.steps - 1)  # the final model
    guard.finished()
    print("training finished", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
