"""The figures of issue 37 on the corpus of real lines (tests/runs/corpus/README.md): every
failure line put at the end of a healthy log, with and without 30 follower lines after it, read
the way `rtool history` reads a log (a file, its bounded tail, the root cause over it)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rtool.runs import signatures
from rtool.runs.logtail import read_logs

CORPUS = Path(__file__).parent / "corpus"
FAILURES: list[dict[str, Any]] = json.loads((CORPUS / "failures.json").read_text())
HEALTHY: list[dict[str, Any]] = json.loads((CORPUS / "healthy.json").read_text())
NODES = ("n1",)
#: What follows a failure in a real log: stack frames of every rank, the launcher's summary.
FOLLOWERS = (
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/run.py", line 797, in main',
    "    run(args)",
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f367500b897 in "
    "/usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
    "frame #1: <unknown function> + 0xe32119 (0x7f3675f6e119 in /usr/local/lib/python3.10/"
    "dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #2: clone + 0x43 (0x7f3c750b0353 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
    "terminate called after throwing an instance of 'c10::Error'",
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 899505 closing "
    "signal SIGTERM",
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", '
    "line 264, in launch_agent",
    "    raise ChildFailedError(",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "============================================================",
    "train.py FAILED",
    "------------------------------------------------------------",
    "Failures:",
    "  <NO_OTHER_FAILURES>",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2024-12-31_16:45:52",
    "  host      : n1",
    "  rank      : 0 (local_rank: 0)",
    "  exitcode  : 1 (pid: 467397)",
    "  error_file: <N/A>",
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
)
assert len(FOLLOWERS) == 30


def _read(tmp_path: Path, lines: list[str]) -> tuple[str, ...]:
    log = tmp_path / "slurm-88.out"
    log.write_text("\n".join(lines) + "\n")
    os.chmod(log, 0o600)
    got = read_logs(str(log), NODES, 1024 * 1024)
    assert got is not None
    return got[1]


def _figures(tmp_path: Path, followers: tuple[str, ...]) -> dict[str, Any]:
    healthy = [h["line"] for h in HEALTHY]
    right = node_hits = node_total = wrong_blames = 0
    misses = []
    for f in FAILURES:
        sig = signatures.match(
            _read(tmp_path, [*healthy, f["line"], *followers]), "FAILED", nodes=NODES
        )
        name = sig.name if sig else None
        right += name == f["kind"]
        if name != f["kind"]:
            misses.append((f["kind"], name, f["line"][:120]))
        if f["node_level"]:
            node_total += 1
            node_hits += name in signatures.NODE_LEVEL
        else:
            wrong_blames += name in signatures.NODE_LEVEL
    return {
        "specific": right / len(FAILURES),
        "node_recall": node_hits / node_total,
        "wrong_blames": wrong_blames,
        "misses": misses,
    }


def test_the_corpus_is_big_enough_and_sourced() -> None:
    assert len(FAILURES) >= 150 and len(HEALTHY) >= 80
    for item in (*FAILURES, *HEALTHY):
        assert item["line"] and item["source"].startswith("https://github.com/"), item
    kinds = {d.name for d in signatures.declared()}
    assert {f["kind"] for f in FAILURES} <= kinds
    assert sum(f["node_level"] for f in FAILURES) >= 15
    passing = ("timeout", "error", "xid", "oom", "ecc", "nccl warn")
    for word in passing:  # healthy lines that mention failures in passing
        assert any(word in h["line"].lower() for h in HEALTHY), word


@pytest.mark.parametrize("followers", [(), FOLLOWERS], ids=["alone", "with-30-followers"])
def test_the_figures_on_the_corpus(tmp_path: Path, followers: tuple[str, ...]) -> None:
    got = _figures(tmp_path, followers)
    assert got["specific"] >= 0.90, got["misses"]
    assert got["node_recall"] >= 0.95, got["misses"]
    assert got["wrong_blames"] == 0, got["misses"]


def test_no_healthy_line_gets_a_cause(tmp_path: Path) -> None:
    lines = _read(tmp_path, [h["line"] for h in HEALTHY])
    assert signatures.match(lines, "COMPLETED", nodes=NODES) is None
    for h in HEALTHY:
        assert signatures.match([h["line"]], "FAILED") is None, h


def test_each_failure_line_alone_gets_its_kind() -> None:
    wrong = []
    for f in FAILURES:
        got = signatures.match([f["line"]], "FAILED")
        if got is None or got.name != f["kind"]:
            wrong.append((f["kind"], got and got.name, f["line"][:100]))
    assert len(wrong) <= 0.05 * len(FAILURES), wrong
