"""The demo's result: a table for people, summary.json for scripts and tests."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from devtools.demo.observe import Accounting
from devtools.demo.scenario import Event
from rtool.core.units import format_duration

EXPECTED = ["time-limit", "save-switch", "hang", "kill-switch", "finished"]


def build(
    events: list[Event],
    accounting: dict[str, Accounting],
    received: dict[str, list[str]],
    tally: dict[str, dict[str, int]],
    wall: float,
    problems: list[str],
) -> dict[str, Any]:
    names = [e.name for e in events]
    missing = [n for n in EXPECTED if n not in names]
    problems = list(problems)
    problems += [f"step {n} did not happen" for n in missing]
    problems += [f"{e.name}: {e.detail}" for e in events if not e.ok]
    for name, acc in accounting.items():
        if not acc.ok:
            problems.append(f"{name}: step accounting failed {acc.as_dict()}")
    lost = sum(a.lost for a in accounting.values())
    return {
        "ok": not problems,
        "wall_seconds": round(wall, 1),
        "events": [asdict(e) for e in events],
        "alerts": tally,
        "messages": received,
        "accounting": {k: a.as_dict() for k, a in accounting.items()},
        "steps_lost": lost,
        "problems": problems,
    }


def write(path: Path, summary: dict[str, Any]) -> None:
    path.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")


def _mark(ok: bool) -> str:
    return "[green]✓[/green]" if ok else "[red]✗[/red]"


def render(console: Console, summary: dict[str, Any]) -> None:
    table = Table(title="rtool demo: summary", show_lines=False, title_justify="left")
    table.add_column("", width=2)
    table.add_column("what")
    table.add_column("result", overflow="fold")
    for e in summary["events"]:
        table.add_row(
            _mark(e["ok"]), e["name"], f"{escape(e['detail'])} [dim](at {e['at']:.0f}s)[/dim]"
        )
    alerts = ", ".join(
        f"{c}: {n['alert']} alert + {n['resolved']} resolved" for c, n in summary["alerts"].items()
    )
    table.add_row("", "alerts sent", alerts or "none")
    for name, acc in summary["accounting"].items():
        text = (
            f"0-{acc['final_checkpoint']} checkpointed, {acc['runs']} run(s): "
            f"{acc['steps_lost']} lost, "
            f"{len(acc['run_twice_after_save'])} run twice after a save"
        )
        if acc["redone"] or acc["discarded"]:
            text += (
                f"; unsaved work of the hung or failed runs: {len(acc['redone'])} step(s) redone, "
                f"{len(acc['discarded'])} past the final checkpoint"
            )
        table.add_row(_mark(acc["ok"]), f"steps {name}", text)
    table.add_row(_mark(summary["steps_lost"] == 0), "steps lost", str(summary["steps_lost"]))
    wall = summary["wall_seconds"]
    table.add_row("", "wall time", format_duration(wall) if wall >= 600 else f"{wall:.0f} s")
    console.print()
    console.print(table)
    if summary["ok"]:
        console.print("[bold green]Every step happened as expected.[/bold green]")
    else:
        console.print("[bold red]Something went wrong:[/bold red]")
        for p in summary["problems"]:
            console.print(f"  - {escape(p)}")
