"""Every regular expression rtool runs, found without a list to keep up to date, and adversarial
text for each (the support of tests/hardening/test_patterns.py).

`all_patterns()` joins two sources: every `re.compile/search/match/fullmatch/sub/...` call with a
literal pattern in rtool's source (found with `ast`), and every compiled pattern held by a module
of rtool once imported (module globals, and inside tuples, lists, dicts and dataclass records
there: the failure signatures, the redaction table). A new pattern anywhere is covered.

`attacks(pattern, size)` builds inputs of `size` characters from generic troublemakers (long
runs of one character, repeated separators, URL pieces) and from the pattern itself: each of
its literal runs repeated, a string that almost matches it repeated, with and without its last
character.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pkgutil
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import rtool

if sys.version_info >= (3, 11):
    from re import _constants as C
    from re import _parser as P
else:  # pragma: no cover
    import sre_constants as C
    import sre_parse as P

ROOT = Path(rtool.__file__).parent
_CALLS = {"compile", "search", "match", "fullmatch", "sub", "subn", "findall", "finditer", "split"}
GENERIC = [
    "a", "a!", " ", "\t", "/", "0", "9", "-", "_", ".", ":", "=", "@", "%", ",", "[", "]", "\\",
    "a/", "://a/", "a=", "?a=a&", "&a", "a-", "a:", "a ", "0-", "0,", "x", "é", "\u2028",
    "aB0_-", "https://a.b/", "//", "::", "a.", "{\"a\":", "\"a\":\"", "==", "1e", "+1",
]  # fmt: skip


def _flags(node: ast.Call, module: Any) -> int:
    expr = node.args[1] if len(node.args) > 1 else None
    for kw in node.keywords:
        if kw.arg == "flags":
            expr = kw.value
    if node.func.attr in ("sub", "subn", "split"):  # type: ignore[attr-defined]
        expr = next((kw.value for kw in node.keywords if kw.arg == "flags"), None)
    if expr is None:
        return 0
    try:
        return int(eval(compile(ast.Expression(expr), "<flags>", "eval"), vars(module)))
    except Exception:
        return 0


def source_patterns() -> Iterator[tuple[str, str, int]]:
    """(where, pattern, flags) of every literal pattern in a `re.*` call in rtool's source."""
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent)
        name = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text())
        module: Any = None
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            f = node.func
            if not (isinstance(f.value, ast.Name) and f.value.id == "re" and f.attr in _CALLS):
                continue
            if not node.args or not isinstance(node.args[0], ast.Constant):
                continue
            text = node.args[0].value
            if not isinstance(text, str):
                continue
            if module is None:
                module = importlib.import_module(name)
            yield f"{rel}:{node.lineno}", text, _flags(node, module)


def _held(value: Any, depth: int = 0) -> Iterator[re.Pattern[str]]:
    if isinstance(value, re.Pattern):
        yield value
    elif depth < 3 and isinstance(value, (tuple, list, frozenset, set)):
        for v in value:
            yield from _held(v, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for v in value.values():
            yield from _held(v, depth + 1)
    elif depth < 3 and dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _held(getattr(value, f.name), depth + 1)


def module_patterns() -> Iterator[tuple[str, str, int]]:
    """(where, pattern, flags) of every compiled pattern a module of rtool holds."""
    for info in pkgutil.walk_packages([str(ROOT)], prefix="rtool."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for attr, value in vars(module).items():
            for p in _held(value):
                if isinstance(p.pattern, str):
                    yield f"{info.name}.{attr}", p.pattern, p.flags


def all_patterns() -> dict[tuple[str, int], str]:
    """(pattern, flags) -> where it was first seen."""
    out: dict[tuple[str, int], str] = {}
    for where, text, flags in [*source_patterns(), *module_patterns()]:
        out.setdefault((text, flags & ~re.UNICODE), where)
    return out


# -- adversarial text ----------------------------------------------------------------------------

_PREFERRED = "a0/-_.:=@ "
_ALL = [chr(i) for i in range(1, 256)]


def _one_char(op: Any, av: Any) -> str:
    regex = re.compile(_render(op, av))
    for c in [*_PREFERRED, *_ALL]:
        if regex.fullmatch(c):
            return c
    return "a"


def _render(op: Any, av: Any) -> str:
    """A one-element pattern for a character-set node (to ask `re` which characters fit)."""
    sub = P.SubPattern(P.State(), [(op, av)])  # type: ignore[no-untyped-call]
    return _unparse(sub)


def _unparse(sub: Any) -> str:
    out = []
    for op, av in sub:
        if op is C.LITERAL:
            out.append(re.escape(chr(av)))
        elif op is C.NOT_LITERAL:
            out.append(f"[^{re.escape(chr(av))}]")
        elif op is C.ANY:
            out.append(".")
        elif op is C.IN:
            out.append("[" + "".join(_set_item(o, a) for o, a in av) + "]")
        else:
            out.append("a")
    return "".join(out)


def _set_item(op: Any, av: Any) -> str:
    if op is C.NEGATE:
        return "^"
    if op is C.LITERAL:
        return re.escape(chr(av))
    if op is C.RANGE:
        return f"{re.escape(chr(av[0]))}-{re.escape(chr(av[1]))}"
    if op is C.CATEGORY:
        return {
            C.CATEGORY_DIGIT: r"\d",
            C.CATEGORY_NOT_DIGIT: r"\D",
            C.CATEGORY_SPACE: r"\s",
            C.CATEGORY_NOT_SPACE: r"\S",
            C.CATEGORY_WORD: r"\w",
            C.CATEGORY_NOT_WORD: r"\W",
        }.get(av, "a")
    return ""


def witness(sub: Any) -> str:
    """A string that (nearly) matches: each repeat taken a few times, each choice's first."""
    out = []
    for op, av in sub:
        if op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
            out.append(_one_char(op, av))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT) or op.name == "POSSESSIVE_REPEAT":
            lo, hi = av[0], av[1]
            out.append(witness(av[2]) * max(lo, min(hi, 3)))
        elif op is C.SUBPATTERN:
            out.append(witness(av[-1]))
        elif op is C.BRANCH:
            out.append(witness(av[1][0]))
        elif op.name == "ATOMIC_GROUP":
            out.append(witness(av))
    return "".join(out)


def literal_runs(sub: Any) -> list[str]:
    runs, cur = [], ""
    for op, av in sub:
        if op is C.LITERAL:
            cur += chr(av)
            continue
        if cur:
            runs.append(cur)
            cur = ""
        children = (
            [av[2]]
            if op in (C.MAX_REPEAT, C.MIN_REPEAT)
            else [av[-1]]
            if op is C.SUBPATTERN
            else list(av[1])
            if op is C.BRANCH
            else []
        )
        for child in children:
            runs += literal_runs(child)
    return [*runs, cur] if cur else runs


def attacks(pattern: re.Pattern[str], size: int) -> list[str]:
    tree = P.parse(pattern.pattern, pattern.flags)
    w = witness(tree) or "a"
    seeds = {*GENERIC, w, w[:-1] or "a", w + "\x00", w[:-1] + "\x00" if len(w) > 1 else "a"}
    for run in literal_runs(tree)[:20]:
        seeds |= {run, run + "a", run + " "}
    out = []
    for seed in sorted(seeds):
        out.append((seed * (size // len(seed) + 1))[:size])
        out.append(w[: len(w) // 2] + (seed * (size // len(seed) + 1))[: size - len(w)])
    return out
