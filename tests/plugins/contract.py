"""What every plug-in of each kind must satisfy, derived from its declaration. Each function
returns the problems it finds (empty: none); tests/plugins/test_contract.py runs them on every
shipped plug-in, and the plug-in test (test_kinds.py) on a throw-away one in a copy of the tree.

A kind's contract: its declaration is complete (a name, a docstring with a summary, and for a
command an Example; every config field has its help), and what is made from it works: the
config schema takes it, its help pages follow the help rules, the defaults its help shows are
its declared ones.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import re
from typing import Any

from rtool.core.config.fields import cli_of, shown_default

NAME = re.compile(r"[a-z][a-z0-9-]*")


def run_cli(*argv: str) -> tuple[int, str, str]:
    """`rtool ARGV...` in this process: (exit code, stdout, stderr), 250 columns wide."""
    from rtool.app.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "250"
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return code, out.getvalue(), err.getvalue()


def _summary(obj: Any) -> str:
    return (inspect.getdoc(obj) or "").split("\n\n")[0]


def fields(model: Any, where: str) -> list[str]:
    """Every field of a declared config model has its help."""
    return [
        f"{where}: field {name!r} has no help (setting(default, 'help'))"
        for name, info in model.model_fields.items()
        if not (info.description or "").strip()
    ]


def help_page(path: list[str]) -> list[str]:
    """`rtool PATH... --help` exists and follows the help rules (tests/app/helppages.py);
    every option made from a field shows that field's default."""
    from tests.app.helppages import pages, problems

    found = {tuple(p): cmd for p, cmd in pages()}
    cmd = found.get(tuple(path))
    if cmd is None:
        return [f"rtool {' '.join(path)}: no such page"]
    code, out, err = run_cli(*path, "--help")
    if code != 0:
        return [f"rtool {' '.join(path)} --help: exit {code}: {err.strip()[-300:]}"]
    out_problems = problems(path, cmd, out)
    for param in cmd.params:
        source = getattr(param, "rtool_field", None)
        if source is None or source[2] is not None:
            continue
        info = source[0].model_fields[source[1]]
        value = shown_default(info)
        if cli_of(info).switch is None and value is not None and not isinstance(info.default, bool):
            text = " ".join((param.help or "").replace("\\[", "[").split())
            if f"(default: {value})" not in text:
                out_problems.append(f"{param.opts[0]}: the help does not show its default {value}")
    return out_problems


def watchdog(cls: Any) -> list[str]:
    """A watchdog (rtool/watchdogs/registry.py)."""
    from rtool.watchdogs.registry import watch_config

    out = [] if NAME.fullmatch(cls.name or "") else [f"{cls!r}: bad name {cls.name!r}"]
    if "Example:" not in (inspect.getdoc(cls) or "") or not _summary(cls):
        out.append(f"watchdog {cls.name}: its docstring needs a summary line and an Example")
    if not cls.in_config:
        return out
    out += fields(cls.spec, f"watchdog {cls.name}")
    required = {n for n, i in cls.spec.model_fields.items() if i.is_required()}
    model = watch_config()
    try:
        model.model_validate({cls.name: [{n: "x" for n in required} | {"bogus": 1}]})
        out.append(f"[[watch.{cls.name}]]: an unknown key is accepted")
    except Exception as exc:
        if "bogus" not in str(exc):
            out.append(f"[[watch.{cls.name}]]: {exc}")
    return out + help_page(["watch", cls.name])


def check(module: Any) -> list[str]:
    """A pre-flight check (rtool/nodes/preflight/registry.py)."""
    from rtool.core.config.types import Section
    from rtool.nodes.preflight.registry import NodeContext

    name = getattr(module, "NAME", "")
    out = [] if NAME.fullmatch(name) else [f"{module.__name__}: bad NAME {name!r}"]
    if not (inspect.getdoc(module) or "").startswith(f"{name}: "):
        out.append(f"check {name}: its docstring starts with '{name}: passes when ...'")
    settings = getattr(module, "Settings", "missing")
    if settings == "missing":
        out.append(f"check {name}: no Settings (a Section of its keys, or None)")
    elif settings is not None:
        if not (isinstance(settings, type) and issubclass(settings, Section)):
            out.append(f"check {name}: Settings is not a config Section")
        else:
            out += fields(settings, f"check {name}")
    for fn in ("applies", "run"):
        if not callable(getattr(module, fn, None)):
            out.append(f"check {name}: no {fn}(ctx)")
    if not out and module.applies(NodeContext(timeout=1)):
        out.append(f"check {name}: applies with nothing asked (it would run in every job)")
    return out


def channel(cls: Any) -> list[str]:
    """A notify channel (rtool/notify/channels/__init__.py)."""
    from rtool.notify.channels.base import ChannelSection

    out = [] if NAME.fullmatch(getattr(cls, "name", "")) else [f"{cls!r}: bad name"]
    if not _summary(cls):
        out.append(f"channel {cls.name}: no docstring (its row in docs/notify.md)")
    config = getattr(cls, "config", None)
    if not (isinstance(config, type) and issubclass(config, ChannelSection)):
        return [*out, f"channel {cls.name}: config is not a ChannelSection"]
    if not callable(getattr(cls, "send", None)):
        out.append(f"channel {cls.name}: no send(envelope)")
    return out + fields(config, f"channel {cls.name}")


def watch_command(name: str) -> list[str]:
    """A written `rtool watch` command (rtool/app/commands/watch_cmd.py WRITTEN)."""
    return help_page(["watch", name])


def command(name: str) -> list[str]:
    """A top-level command (rtool/app/plumbing/lazy.py COMMANDS)."""
    from rtool.app.plumbing.lazy import COMMANDS

    summary = COMMANDS.line(name).summary
    out = [] if summary.endswith((".", "?", ")")) else [f"rtool {name}: summary is not a sentence"]
    return out + help_page([name])


def signature(decl: Any) -> list[str]:
    """A failure signature (rtool/runs/signatures/__init__.py): a name and a label, its own real
    lines matched as itself, its near misses and the shared corpus's ones not matched, its
    pattern linear-time (rtool/core/linear.py)."""
    from pathlib import Path

    from rtool.core.linear import problem
    from rtool.runs import signatures

    out = [] if NAME.fullmatch(decl.name) and decl.label else [f"{decl!r}: bad name or no label"]
    if not (decl.examples and decl.near_misses):
        out.append(f"signature {decl.name}: declare its real lines and near misses")
    regex = decl.compiled().regex
    for line in decl.examples:
        got = signatures.match([line])
        if got is None or got.name != decl.name:
            out.append(f"signature {decl.name}: its example {line!r} gives {got}")
    corpus = Path(__file__).parents[1] / "runs" / "corpus" / "near_misses.txt"
    near = [x for x in corpus.read_text().splitlines() if x.strip() and not x.startswith("# ")]
    out += [
        f"signature {decl.name} matches {x!r}"
        for x in [*decl.near_misses, *near]
        if regex.search(x)
    ]
    if problem(regex) is not None:
        out.append(f"signature {decl.name}: {problem(regex)}")
    return out


def section(name: str, cls: Any) -> list[str]:
    """A config section (rtool/app/plumbing/sections.py LINES): a Section with a docstring, its
    defaults valid, unknown keys refused; `Config` has it as `[NAME]`."""
    from rtool.app.plumbing.appconfig import Config
    from rtool.core.config.types import Section

    if not (isinstance(cls, type) and issubclass(cls, Section)):
        return [f"section {name}: {cls!r} is not a config Section"]
    out = [] if _summary(cls) else [f"section {name}: no docstring"]
    if Config.model_fields.get(name) is None or Config().model_dump()[name] != cls().model_dump():
        out.append(f"section {name}: Config has no [{name}] with its defaults")
    try:
        Config.model_validate({name: {"bogus": 1}})
        out.append(f"[{name}]: an unknown key is accepted")
    except Exception as exc:
        if f"{name}.bogus" not in str(exc):
            out.append(f"[{name}]: {exc}")
    return out
