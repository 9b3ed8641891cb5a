"""The shape of the code, checked on its source (ast, nothing imported): layers import only
downwards, no cycles between packages, and the size limits (docs/architecture.md).

Run alone: `pytest tests/test_structure.py` (each file parsed once: a few seconds).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The one top-level package of the distribution (pyproject.toml: tool.setuptools.packages.find).
PACKAGES = ("rtool",)
#: The floors: a unit may import units of its own rank or lower, never higher. Every folder
#: directly under rtool/ is a unit and needs a rank here; `rtool/__init__.py` (the version) is
#: the ground floor, `rtool/__main__.py` (python -m rtool) the top.
RANKS = {
    "rtool": 0,
    "rtool.core": 0,
    "rtool.shim": 1,
    "rtool.notify": 1,
    "rtool.slurm_templates": 1,
    "rtool.runs": 1,
    "rtool.nodes": 1,
    "rtool.cron": 2,
    "rtool.drill": 2,
    "rtool.watchdogs": 3,
    "rtool.app": 5,
    "rtool.__main__": 6,
    "rtool.cli": 6,  # rtool 0.1's entry point, kept for its cron ticks (docs/upgrading.md)
}
#: rtool.shim runs inside the training: of rtool it may use only rtool.core.
SHIM_MAY_IMPORT = {"rtool", "rtool.core", "rtool.shim"}
#: The repository's tooling (local Slurm, fake servers, the demo): not installed, so nothing
#: under rtool/ may import it; it may import rtool.
TOOLING = "devtools"
MAX_MODULE, MAX_CLASS, MAX_FUNCTION = 400, 250, 60
#: Trees whose sizes are checked (tests and benchmarks too).
SIZED = (*PACKAGES, TOOLING, "tests", "bench")


def unit(module: str) -> str:
    """The floor unit of a dotted module name: `rtool.core`, `rtool.watchdogs`, `rtool.app`..."""
    parts = module.split(".")
    if parts[0] != "rtool" or len(parts) == 1:
        return parts[0]
    return f"rtool.{parts[1]}"


def modules(root: str) -> Iterator[tuple[str, Path]]:
    for path in sorted((ROOT / root).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        yield name, path


@cache
def parsed(path: Path) -> tuple[ast.Module, int]:
    """The module's syntax tree and its number of lines (each file is parsed once)."""
    text = path.read_text()
    return ast.parse(text, str(path)), len(text.splitlines())


def imports(path: Path, module: str) -> Iterator[tuple[str, int]]:
    """Every project module `path` imports (lazy and TYPE_CHECKING imports included)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(parsed(path)[0]):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            names = [base]
        else:
            continue
        for name in names:
            if name.split(".")[0] in PACKAGES:
                yield name, node.lineno


@cache
def edges() -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, where) for every import between different units."""
    out = []
    for root in PACKAGES:
        for module, path in modules(root):
            src = unit(module)
            for target, line in imports(path, module):
                dst = unit(target)
                if dst != src:
                    out.append((src, dst, f"{path.relative_to(ROOT)}:{line} imports {target}"))
    return out


def test_every_unit_has_a_rank() -> None:
    units = {src for src, _, _ in edges()} | {dst for _, dst, _ in edges()}
    assert units <= set(RANKS), f"give these a rank in RANKS: {units - set(RANKS)}"


def test_layers_import_only_downwards() -> None:
    upward = [
        f"{where} ({src} rank {RANKS[src]} -> {dst} rank {RANKS[dst]})"
        for src, dst, where in edges()
        if src in RANKS and dst in RANKS and RANKS[dst] > RANKS[src]
    ]
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_shim_imports_only_core() -> None:
    bad = [
        where for src, dst, where in edges() if src == "rtool.shim" and dst not in SHIM_MAY_IMPORT
    ]
    assert not bad, "\n".join(bad)


def tooling_uses(path: Path) -> Iterator[int]:
    """Lines where `path` imports the tooling, or names a module of it in a string (as lazy
    registries do), inside functions and under TYPE_CHECKING included."""
    for node in ast.walk(parsed(path)[0]):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if not node.level else []
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value] if node.value.startswith(f"{TOOLING}.") else []
        else:
            continue
        if any(n.split(".")[0] == TOOLING for n in names):
            yield node.lineno


def test_rtool_never_imports_the_tooling() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line}"
        for root in PACKAGES
        for _, path in modules(root)
        for line in tooling_uses(path)
    ]
    assert not bad, f"the installed package uses {TOOLING}/ (not installed):\n" + "\n".join(bad)


def test_the_checker_sees_the_tooling(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import os\ndef f():\n    from devtools.localslurm import control\n"
        'LAZY = "devtools.demo.run"\nimport devtools\nfrom rtool.devtools import x\n'
    )
    assert sorted(tooling_uses(tmp_path / "m.py")) == [3, 4, 5]


def test_every_folder_is_a_unit_with_a_rank() -> None:
    folders = {
        f"rtool.{p.name}" for p in (ROOT / "rtool").iterdir() if (p / "__init__.py").exists()
    }
    assert folders <= set(RANKS), f"give these a rank in RANKS: {folders - set(RANKS)}"


def test_no_cycles_between_packages() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for src, dst, _ in edges():
        graph[src].add(dst)
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 visiting, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def load_imports(path: Path, module: str, names: set[str]) -> Iterator[str]:
    """The project modules `path` imports when it is loaded: its module-level imports (not
    those inside functions or `if TYPE_CHECKING:`), `from pkg import mod` resolved to `mod`."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in parsed(path)[0].body:
        if isinstance(node, ast.Import):
            found = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            found = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in names else base for a in node.names
            ]
        else:
            continue
        for name in found:
            while name and name not in names:
                name = name.rpartition(".")[0]
            if name and name != module:
                yield name


def test_no_cycles_between_modules() -> None:
    """No two modules need each other to load (a lazy import inside a function may close a
    loop on purpose: it runs after both are loaded)."""
    found = dict(modules("rtool"))
    graph = {m: set(load_imports(path, m, set(found))) for m, path in found.items()}
    cycle = _find_cycle(graph)
    assert cycle is None, "modules that import each other: " + " -> ".join(cycle or [])


def test_the_checker_sees_module_cycles(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from rtool.x import b\nimport typing\n")
    (tmp_path / "b.py").write_text("def f():\n    import rtool.x.a\n")
    names = {"rtool.x.a", "rtool.x.b"}
    assert list(load_imports(tmp_path / "a.py", "rtool.x.a", names)) == ["rtool.x.b"]
    assert list(load_imports(tmp_path / "b.py", "rtool.x.b", names)) == []  # lazy: not a loop


def test_the_checker_sees_cycles_and_upward_imports() -> None:
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None
    assert unit("rtool.core.slurm.cmd") == "rtool.core" and unit("rtool.app.cli") == "rtool.app"
    assert unit("rtool.watchdogs.disk") == "rtool.watchdogs" and unit("rtool") == "rtool"


@cache
def sizes() -> list[tuple[str, int, int]]:
    """(what, lines, limit) for every module, class and function of the sized trees."""
    out = []
    for root in SIZED:
        for _, path in modules(root):
            tree, length = parsed(path)
            rel = path.relative_to(ROOT)
            out.append((str(rel), length, MAX_MODULE))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    limit = MAX_CLASS if isinstance(node, ast.ClassDef) else MAX_FUNCTION
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    out.append((f"{rel}:{node.lineno} {node.name}", lines, limit))
    return out


@pytest.mark.parametrize("kind", ["module", "class", "function"])
def test_size_limits(kind: str) -> None:
    limit = {"module": MAX_MODULE, "class": MAX_CLASS, "function": MAX_FUNCTION}[kind]
    over = [f"{what}: {n} lines" for what, n, lim in sizes() if lim == limit and n > limit]
    assert not over, f"over {limit} lines:\n" + "\n".join(over)


#: Private names rtool may import from another package, and why. Python has no public parser of
#: regular expressions; the linear-time check of every pattern reads the parsed form.
PRIVATE_ALLOWED = {("rtool.core.linear", "re._parser"), ("rtool.core.linear", "re._constants")}


def _private(dotted: str) -> bool:
    return any(p.startswith("_") and not p.startswith("__") for p in dotted.split("."))


def private_imports(path: Path, module: str) -> Iterator[tuple[str, int]]:
    """(name, line) of every private name `path` takes from another package: `import typer._x`,
    `from click._compat import ...`, `from typer.core import _Param`, `import_module("x._y")`
    (a module's own package and its subpackages are its own business)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(parsed(path)[0]):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names if _private(a.name))
        elif isinstance(node, ast.ImportFrom) and not node.level:
            base = node.module or ""
            if base == package or base.startswith(package + "."):
                continue
            for a in node.names:
                if _private(f"{base}.{a.name}"):
                    yield f"{base}.{a.name}", node.lineno
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in ("import_module", "find_spec"):
                continue
            for c in ast.walk(node.args[0]):  # `"typer._x" if ... else "click.x"` too
                if isinstance(c, ast.Constant) and isinstance(c.value, str) and _private(c.value):
                    yield c.value, node.lineno


def test_no_private_imports_from_other_packages() -> None:
    """A typer or click upgrade must not break rtool through their internals (issue 40)."""
    found = []
    for module, path in modules("rtool"):
        for name, line in private_imports(path, module):
            allowed = any(module == m and name.startswith(n) for m, n in PRIVATE_ALLOWED)
            if not allowed:
                found.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not found, "private imports:\n" + "\n".join(found)


def test_the_private_import_checker_sees_each_form(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        "import typer._click.core\nfrom click._compat import x\nfrom typer.core import _Param\n"
        "import importlib\nimportlib.import_module('typer._click.exceptions' if 1 else 'click')\n"
        "from rtool.app.own import _mine\nfrom re import compile\n"
    )
    parsed.cache_clear()
    found = [name for name, _ in private_imports(src, "rtool.app.m")]
    assert found == [
        "typer._click.core",
        "click._compat.x",
        "typer.core._Param",
        "typer._click.exceptions",
    ]
