"""The checks of one node, and the one line each node prints for the job-level step.

    python -I -m rtool.nodes.preflight --gpus 8 --dir /scratch --min-free 10GiB --command C --json

prints `RTOOL-PREFLIGHT {"node": ..., "ok": ..., "outcomes": [...]}` (exit 0 healthy, 1 not).
Its flags are the registered checks' settings (`registry.Settings`, the same flags as
`rtool preflight`'s), plus --timeout and --json; `settings_argv` writes them.
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

from pydantic import ValidationError

from rtool.core.config.fields import flag_of
from rtool.nodes.preflight.base import NodeBase, NodeReport, Outcome
from rtool.nodes.preflight.registry import CHECKS, NodeContext, Settings

MARK = "RTOOL-PREFLIGHT "
MAX_OUTPUT = 2000


def node_name() -> str:
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def run_checks(ctx: NodeBase, only: list[str] | None = None) -> NodeReport:
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


def settings_argv(values: dict[str, Any]) -> list[str]:
    """The node-side flags that give the checks' settings `values` (left out: None, empty)."""
    argv: list[str] = []
    for name, info in Settings.model_fields.items():
        value = values.get(name)
        flag = flag_of(name, info)
        if value is None or value is False or value == []:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return argv


def parse_args(argv: list[str]) -> tuple[NodeBase, argparse.Namespace]:
    p = argparse.ArgumentParser(prog="python -I -m rtool.nodes.preflight", description=__doc__)
    for name, info in Settings.model_fields.items():
        many = getattr(info.annotation, "__origin__", None) is list
        action = "store_true" if info.annotation is bool else ("append" if many else "store")
        p.add_argument(flag_of(name, info), dest=name, action=action, help=info.description)
    p.add_argument("--timeout", help=NodeBase.model_fields["timeout"].description)
    p.add_argument("--json", action="store_true", help="print the RTOOL-PREFLIGHT line")
    args = p.parse_args(argv)
    given = {k: v for k in Settings.model_fields if (v := getattr(args, k)) not in (None, False)}
    if args.timeout is not None:
        given["timeout"] = args.timeout
    try:
        ctx = NodeContext(**given)
    except ValidationError as exc:
        err = exc.errors()[0]
        p.error(f"{'.'.join(map(str, err['loc']))}: {err['msg']}")
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
