"""The checks of one node, and the one line each node prints for the job-level step.

    python -I -m rtool.nodes.preflight --gpus 8 --dir /scratch --min-free 10GiB --command C --json

prints `RTOOL-PREFLIGHT {"node": ..., "ok": ..., "outcomes": [...]}` (exit 0 healthy, 1 not).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from dataclasses import asdict
from typing import Any

from rtool.core.units import UnitError, parse_duration, parse_size
from rtool.nodes.preflight.base import NodeContext, NodeReport, Outcome
from rtool.nodes.preflight.registry import CHECKS

MARK = "RTOOL-PREFLIGHT "
MAX_OUTPUT = 2000


def node_name() -> str:
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def run_checks(ctx: NodeContext, only: list[str] | None = None) -> NodeReport:
    report = NodeReport(node_name())
    start = time.monotonic()
    for name, check in CHECKS.items():
        if (only and name not in only) or not check.applies(ctx):
            continue
        try:
            outcome = check.run(ctx)
        except Exception as exc:  # a broken check is a failed check, never a crash
            outcome = Outcome(name, False, f"check crashed: {type(exc).__name__}: {exc}")
        report.outcomes.append(outcome)
    report.seconds = round(time.monotonic() - start, 3)
    return report


def to_line(report: NodeReport) -> str:
    outcomes = [{**asdict(o), "output": o.output[-MAX_OUTPUT:]} for o in report.outcomes]
    data = {"node": report.node, "ok": report.ok, "seconds": report.seconds, "outcomes": outcomes}
    return MARK + json.dumps(data, sort_keys=True)


def from_line(line: str) -> NodeReport | None:
    """The report in one `RTOOL-PREFLIGHT {...}` line (None for any other line)."""
    if not line.startswith(MARK):
        return None
    try:
        data: Any = json.loads(line[len(MARK) :])
        outcomes = [
            Outcome(str(o["check"]), bool(o["ok"]), str(o["detail"]), str(o.get("output", "")))
            for o in data["outcomes"]
        ]
        return NodeReport(str(data["node"]), outcomes, float(data.get("seconds", 0)))
    except (ValueError, KeyError, TypeError):
        return None


def parse_args(argv: list[str]) -> tuple[NodeContext, argparse.Namespace]:
    p = argparse.ArgumentParser(prog="python -I -m rtool.nodes.preflight", description=__doc__)
    p.add_argument("--gpus", type=int, default=None, help="GPUs requested on this node")
    p.add_argument("--dir", action="append", default=[], help="folder to write (repeatable)")
    p.add_argument("--min-free", default="0", help="free space needed in each folder (10GiB)")
    p.add_argument("--command", default=None, help="your own check (bash -c), exit 0 = healthy")
    p.add_argument("--timeout", default="20s", help="each command's timeout (20s)")
    p.add_argument("--json", action="store_true", help="print the RTOOL-PREFLIGHT line")
    args = p.parse_args(argv)
    try:
        ctx = NodeContext(
            gpus=args.gpus,
            dirs=tuple(args.dir),
            min_free=parse_size(args.min_free) if args.min_free != "0" else 0,
            command=args.command or None,
            timeout=parse_duration(args.timeout),
            nvidia_smi=os.environ.get("RTOOL_NVIDIA_SMI", "nvidia-smi"),
        )
    except UnitError as exc:
        p.error(str(exc))
    return ctx, args


def main(argv: list[str] | None = None) -> int:
    ctx, args = parse_args(sys.argv[1:] if argv is None else argv)
    report = run_checks(ctx)
    if args.json:
        print(to_line(report), flush=True)
    else:
        print(f"pre-flight {'OK' if report.ok else 'FAILED'} - {report.summary()}")
        for o in report.outcomes:
            print(f"  {'ok  ' if o.ok else 'FAIL'} {o.check}: {o.detail}")
    return 0 if report.ok else 1
