"""The docs' reference tables, made from the registries: every watchdog, pre-flight check,
channel and command, with its options, config keys, defaults and help as declared.

    python -m tests.app.reference --write     # rewrite the generated blocks in docs/
    python -m tests.app.reference --check     # exit 1 naming each block that is out of date

A generated block sits in a docs page between `<!-- rtool:begin NAME -->` and
`<!-- rtool:end NAME -->`; NAME is a table of `TABLES`, with an argument after a colon where
the table takes one (`watch-options:disk`). A test (tests/app/test_reference.py) checks that
the docs are what the registries say, so a new plug-in shows up in its table by `--write`.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rtool.core.config.fields import cli_of, flag_of, shown_default

BEGIN = re.compile(r"<!-- rtool:begin ([\w-]+)(?::([\w-]+))? -->\n")


def _summary(obj: Any) -> str:
    """The first paragraph of a docstring, on one line."""
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def _default(info: Any) -> str:
    cli = cli_of(info)
    if cli.default_from:
        section, _, key = cli.default_from.rpartition(".")
        return f"[{section}] {key}"
    value = shown_default(info)
    return f"`{value}`" if value is not None else ("required" if info.is_required() else "")


def _keys(model: Any, *, flags: bool, skip: set[str] | None = None) -> str:
    """A table of a model's keys: key, (flag,) default, meaning."""
    head = "| key | option | default | meaning |" if flags else "| key | default | meaning |"
    rows = [head, "|---|---|---|---|" if flags else "|---|---|---|"]
    for name, info in model.model_fields.items():
        if name in (skip or set()):
            continue
        cli = cli_of(info)
        cells = [f"`{name}`"]
        if flags:
            if not cli.cli:
                given = ""
            elif cli.switch:
                given = f"`{cli.switch[0]}`"
            elif info.is_required() and cli.flag is None:
                given = name.upper() + ("..." if cli.each else "")
            else:
                given = f"`{flag_of(name, info)}`"
            cells.append(given)
        cells += [_default(info), _cell(info.description)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def watchdogs(_: str | None = None) -> str:
    """Every `rtool watch` command: one per watchdog, then the written ones."""
    from rtool.app.commands.watch_cmd import WRITTEN
    from rtool.core.registry import load
    from rtool.watchdogs.registry import WATCHDOGS

    rows = ["| command | config | what it watches |", "|---|---|---|"]
    for w in WATCHDOGS.all():
        entry = f"`[[watch.{w.name}]]`" if w.in_config else ""
        rows.append(f"| `rtool watch {w.name}` | {entry} | {_cell(_summary(w))} |")
    for name, where in WRITTEN.items():
        rows.append(f"| `rtool watch {name}` | | {_cell(_summary(load(where)))} |")
    return "\n".join(rows)


def watch_options(name: str | None = None) -> str:
    """The options and `[[watch.NAME]]` keys of one watchdog, or of each under a heading."""
    from rtool.app.plumbing.watch_common import COMMON, COMMON_NAMES
    from rtool.watchdogs.registry import WATCHDOGS, by_name

    if name is None:
        parts = [f"#### `rtool watch {n}`\n\n{watch_options(n)}" for n in WATCHDOGS]
        common = ", ".join(f"`{c.flag}`" for c in COMMON)
        return "\n\n".join([*parts, f"And the options of every `rtool watch` command: {common}."])
    w = by_name(name)
    if w is None:
        raise KeyError(f"no watchdog {name!r}")
    return _keys(w.spec, flags=True, skip=COMMON_NAMES)


def preflight_checks(_: str | None = None) -> str:
    from rtool.nodes.preflight.registry import CHECKS

    rows = ["| check | passes when | keys |", "|---|---|---|"]
    for name, check in CHECKS.items():
        text = _summary(check).removeprefix(f"{name}:").strip()
        keys = ", ".join(f"`{k}`" for k in (check.Settings.model_fields if check.Settings else []))
        rows.append(f"| `{name}` | {_cell(text)} | {keys} |")
    return "\n".join(rows)


def preflight_keys(_: str | None = None) -> str:
    from rtool.nodes.config import PreflightConfig

    return _keys(PreflightConfig, flags=False)


def channels(_: str | None = None) -> str:
    from rtool.notify.channels import CHANNELS
    from rtool.notify.channels.base import ChannelSection

    common = set(ChannelSection.model_fields)
    rows = ["| channel | sends | its keys (besides the common ones) |", "|---|---|---|"]
    for c in CHANNELS.all():
        keys = ", ".join(
            f"`{k}`" + (f" ({_default(i)})" if _default(i) else "")
            for k, i in c.config.model_fields.items()
            if k not in common
        )
        rows.append(f"| `[notify.{c.name}]` | {_cell(_summary(c))} | {keys} |")
    return "\n".join(rows)


def channel_keys(_: str | None = None) -> str:
    from rtool.notify.channels.base import ChannelSection

    return _keys(ChannelSection, flags=False)


def commands(_: str | None = None) -> str:
    from rtool.app.plumbing.lazy import COMMANDS

    rows = ["| command | what it does |", "|---|---|"]
    rows += [f"| `rtool {name}` | {_cell(COMMANDS.line(name).summary)} |" for name in COMMANDS]
    return "\n".join(rows)


#: name -> the function that makes its table (its argument: the part after `:`).
TABLES: dict[str, Callable[[str | None], str]] = {
    "watchdogs": watchdogs,
    "watch-options": watch_options,
    "preflight-checks": preflight_checks,
    "preflight-keys": preflight_keys,
    "channels": channels,
    "channel-keys": channel_keys,
    "commands": commands,
}


def blocks(text: str) -> Iterator[tuple[str, str | None, int, int]]:
    """(table, argument, start, end) of every generated block of a page (the body's span)."""
    for m in BEGIN.finditer(text):
        name, arg = m.group(1), m.group(2)
        end_mark = f"<!-- rtool:end {name}{':' + arg if arg else ''} -->"
        end = text.find(end_mark, m.end())
        if end < 0:
            raise ValueError(f"{name}: no {end_mark}")
        yield name, arg, m.end(), end


def render(name: str, arg: str | None = None) -> str:
    """The body of the block `name[:arg]` (ends with a newline)."""
    if name not in TABLES:
        raise KeyError(f"unknown table {name!r} (one of {', '.join(TABLES)})")
    return TABLES[name](arg).rstrip("\n") + "\n"


def updated(text: str) -> str:
    """`text` with every generated block made again."""
    out, pos = [], 0
    for name, arg, start, end in blocks(text):
        out += [text[pos:start], render(name, arg)]
        pos = end
    return "".join(out) + text[pos:]


def stale(docs: Path) -> list[str]:
    """`page: block` for every generated block of the docs that differs from the registries."""
    found = []
    for page in sorted(docs.glob("*.md")):
        text = page.read_text()
        for name, arg, start, end in blocks(text):
            if text[start:end] != render(name, arg):
                found.append(f"{page.name}: {name}{':' + arg if arg else ''}")
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.app.reference", description=__doc__)
    p.add_argument("--docs", type=Path, default=Path(__file__).resolve().parents[2] / "docs")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the generated blocks")
    mode.add_argument("--check", action="store_true", help="exit 1 when a block is out of date")
    args = p.parse_args(argv)
    if args.check:
        bad = stale(args.docs)
        for line in bad:
            print(f"out of date: {line} (python -m tests.app.reference --write)", file=sys.stderr)
        return 1 if bad else 0
    for page in sorted(args.docs.glob("*.md")):
        text = page.read_text()
        new = updated(text)
        if new != text:
            page.write_text(new)
            print(f"rewrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
