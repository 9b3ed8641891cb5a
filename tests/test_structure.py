"""The shape of the code, checked on its source (ast, nothing imported): layers import only
downwards, no cycle between packages at any depth (a package and its subpackage included), no
circle between modules (imports inside functions and under TYPE_CHECKING counted), and the size
limits (docs/architecture.md).

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
#: The floors: a unit imports only units of lower floors (and `rtool`, the version), so each
#: unit's floor is one above the highest it imports. Every folder directly under rtool/ is a unit
#: and needs a floor here; docs/architecture.md's table shows them, and
#: tests/docs/test_architecture.py checks that table, these and the imports agree.
RANKS = {
    "rtool": 0,
    "rtool.core": 0,
    "rtool.shim": 1,
    "rtool.notify": 1,
    "rtool.runs": 1,
    "rtool.nodes": 2,
    "rtool.slurm_templates": 2,
    "rtool.cron": 3,
    "rtool.drill": 3,
    "rtool.watchdogs": 4,
    "rtool.app": 5,
    "rtool.__main__": 6,
    "rtool.cli": 6,  # rtool 0.1's entry point, kept for its cron ticks (docs/upgrading.md)
}
#: rtool.shim runs inside the training: of rtool it may use only rtool.core.
SHIM_MAY_IMPORT = {"rtool", "rtool.core", "rtool.shim"}
#: The repository's tooling (local Slurm, fake servers, the demo): not installed, so nothing
#: under rtool/ may import it; it may import rtool.
TOOLING = "devtools"
#: Lines per module, class and function: the package and the tooling (issue 40's headroom), and
#: the tests and benchmarks.
LIMITS = {"package": (350, 200, 50), "tests": (400, 250, 60)}
#: Trees whose sizes are checked, and their limits.
SIZED = {**dict.fromkeys((*PACKAGES, TOOLING), "package"), "tests": "tests", "bench": "tests"}


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


@cache
def module_names() -> frozenset[str]:
    return frozenset(name for root in PACKAGES for name, _ in modules(root))


def imports(path: Path, module: str) -> Iterator[tuple[str, int]]:
    """Every project module `path` imports: at its top, inside functions and under
    `if TYPE_CHECKING:` alike; `from pkg import mod` is `pkg.mod`, `from mod import name` is
    `mod` (a name that is no module is its module)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(parsed(path)[0]):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            names = [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            while name.split(".")[0] in PACKAGES and name not in module_names():
                name = name.rpartition(".")[0]
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


#: Circles other helpers of issue 40 remove in their own branches: H2 rtool/app (its package
#: cycle, nodes_cmd <-> restart_check), H4 the pre-flight registry, H5 the shim's deadline. The
#: lead empties this after merging them. Each entry must match a circle exactly: a new circle,
#: one that grows, or an entry that no longer occurs fails.
KNOWN_CIRCLES: tuple[frozenset[str], ...] = ()


@cache
def module_graph() -> dict[str, dict[str, str]]:
    """module -> {module it imports: where (the first such import)}, every import counted."""
    graph: dict[str, dict[str, str]] = {}
    for root in PACKAGES:
        for module, path in modules(root):
            out = graph.setdefault(module, {})
            for target, line in imports(path, module):
                if target != module:
                    out.setdefault(target, f"{path.relative_to(ROOT)}:{line}")
    return graph


@cache
def packages() -> frozenset[str]:
    return frozenset(m.rpartition(".")[0] for m in module_graph() if "." in m)


def package_of(module: str, depth: int) -> str:
    """The package a module counts in at `depth` (1: the units under rtool/, 2: their
    subpackages ...): its innermost package cut to that depth; the modules beside
    `rtool/__init__.py` (`__main__`, `cli`) are units of their own."""
    parent = module.rpartition(".")[0]
    is_package = module in packages()
    if not is_package and parent == "rtool":
        return module
    return ".".join((module if is_package else parent).split(".")[: depth + 1])


def circles(graph: dict[str, dict[str, str]]) -> list[frozenset[str]]:
    """The strongly connected parts of more than one node (Kosaraju, without recursion)."""
    order: list[str] = []
    seen: set[str] = set()
    for start in sorted(graph):
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(sorted(graph[start])))]
        while stack:
            node, nxt = stack[-1]
            child = next((c for c in nxt if c in graph and c not in seen), None)
            if child is None:
                order.append(stack.pop()[0])
            else:
                seen.add(child)
                stack.append((child, iter(sorted(graph[child]))))
    back: dict[str, set[str]] = defaultdict(set)
    for node, targets in graph.items():
        for t in targets:
            back[t].add(node)
    found, done = [], set()
    for node in reversed(order):
        if node in done:
            continue
        part, todo = set(), [node]
        while todo:
            n = todo.pop()
            if n not in done:
                done.add(n)
                part.add(n)
                todo.extend(back[n] - done)
        if len(part) > 1:
            found.append(frozenset(part))
    return found


def collapsed(depth: int) -> dict[str, dict[str, str]]:
    """The module graph with each module replaced by its package at `depth`."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for module, targets in module_graph().items():
        src = package_of(module, depth)
        out.setdefault(src, {})
        for target, where in targets.items():
            if (dst := package_of(target, depth)) != src:
                out[src].setdefault(dst, f"{where} imports {target}")
    return dict(out)


def explain(graph: dict[str, dict[str, str]], part: frozenset[str]) -> str:
    """The circle's members, then each import between them and where it is."""
    inside = [f"  {a} -> {b}: {graph[a][b]}" for a in sorted(part) for b in graph[a] if b in part]
    return ", ".join(sorted(part)) + "\n" + "\n".join(sorted(inside))


def unexpected(graph: dict[str, dict[str, str]], seen: set[frozenset[str]]) -> list[str]:
    """The circles of `graph` that are not KNOWN_CIRCLES nor in `seen` (which gets them all)."""
    bad = []
    for part in circles(graph):
        if part not in KNOWN_CIRCLES and part not in seen:
            bad.append(explain(graph, part))
        seen.add(part)
    return bad


def test_no_cycles_between_packages_at_any_depth() -> None:
    """Package A imports package B and B imports A, at every depth: between the units under
    rtool/ (the floors), and between a package and its own subpackages."""
    deepest = max(len(m.split(".")) for m in module_graph())
    bad, seen = [], set()
    for depth in range(1, deepest):
        bad += [f"depth {depth}: {b}" for b in unexpected(collapsed(depth), seen)]
    assert not bad, "import cycles between packages:\n" + "\n".join(bad)


def test_no_circles_between_modules() -> None:
    """No module imports one that imports it back, directly or around a circle, counting the
    imports inside functions and under `if TYPE_CHECKING:`."""
    seen: set[frozenset[str]] = set()
    bad = unexpected(module_graph(), seen)
    assert not bad, "modules that import each other:\n" + "\n\n".join(bad)


def test_every_known_circle_still_occurs() -> None:
    """An entry of KNOWN_CIRCLES that is gone is removed (the allowlist only shrinks)."""
    seen: set[frozenset[str]] = set()
    unexpected(module_graph(), seen)
    for depth in range(1, max(len(m.split(".")) for m in module_graph())):
        unexpected(collapsed(depth), seen)
    gone = [sorted(c) for c in KNOWN_CIRCLES if c not in seen]
    assert not gone, f"remove from KNOWN_CIRCLES (fixed): {gone}"


def test_the_checker_counts_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import typing\nfrom rtool.core import units\n")
    lazy = "def f():\n    from rtool.runs import model\n"
    (tmp_path / "b.py").write_text(f"{lazy}if typing.TYPE_CHECKING:\n    import rtool.cli\n")
    assert [n for n, _ in imports(tmp_path / "a.py", "rtool.x.a")] == ["rtool.core.units"]
    assert [n for n, _ in imports(tmp_path / "b.py", "rtool.x.b")] == [
        "rtool.runs.model",
        "rtool.cli",
    ]


def test_the_checker_sees_circles_and_upward_imports() -> None:
    graph = {"a": {"b": ""}, "b": {"c": ""}, "c": {"a": ""}, "d": {"a": ""}, "e": {"e": ""}}
    assert circles(graph) == [frozenset("abc")]
    assert circles({"a": {"b": ""}, "b": {}}) == []
    assert package_of("rtool.runs.signatures.xid", 1) == "rtool.runs"
    assert package_of("rtool.runs.signatures.xid", 2) == "rtool.runs.signatures"
    assert package_of("rtool.runs.model", 2) == "rtool.runs"
    assert package_of("rtool.runs.signatures", 3) == "rtool.runs.signatures"
    assert package_of("rtool.__main__", 2) == "rtool.__main__" and package_of("rtool", 1) == "rtool"
    assert unit("rtool.core.slurm.cmd") == "rtool.core" and unit("rtool.app.cli") == "rtool.app"
    assert unit("rtool.watchdogs.disk") == "rtool.watchdogs" and unit("rtool") == "rtool"


@cache
def sizes() -> list[tuple[str, str, int, int]]:
    """(kind, what, lines, limit) for every module, class and function of the sized trees."""
    out = []
    for root, tree_kind in SIZED.items():
        max_module, max_class, max_function = LIMITS[tree_kind]
        for _, path in modules(root):
            tree, length = parsed(path)
            rel = path.relative_to(ROOT)
            out.append(("module", str(rel), length, max_module))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    is_class = isinstance(node, ast.ClassDef)
                    kind, limit = ("class", max_class) if is_class else ("function", max_function)
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    out.append((kind, f"{rel}:{node.lineno} {node.name}", lines, limit))
    return out


@pytest.mark.parametrize("kind", ["module", "class", "function"])
def test_size_limits(kind: str) -> None:
    over = [
        f"{what}: {n} lines (limit {lim})" for k, what, n, lim in sizes() if k == kind and n > lim
    ]
    assert not over, f"{kind}s over their limit:\n" + "\n".join(over)
