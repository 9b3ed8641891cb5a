"""The app's layout (docs/architecture.md): commands one per module, the CLI's infrastructure
apart in plumbing/, and no circle among its packages or modules, counting the imports inside
functions and under TYPE_CHECKING (source parsed with `ast`, nothing imported)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from rtool.app.plumbing.lazy import COMMANDS
from tests.test_structure import ROOT, _find_cycle, imports, modules

APP = "rtool.app"


def _graph() -> tuple[dict[str, set[str]], dict[str, str]]:
    """Module -> the app modules it imports (a `from pkg import mod` resolved to the module),
    and module -> its package."""
    found = dict(modules("rtool"))
    names = set(found)
    graph: dict[str, set[str]] = {}
    package: dict[str, str] = {}
    for module, path in found.items():
        if not module.startswith(APP):
            continue
        package[module] = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets = set()
        for target, _ in imports(path, module):
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target.startswith(APP) and target != module:
                targets.add(target)
        graph[module] = targets
    return graph, package


def test_no_module_circle_in_the_app() -> None:
    graph, _ = _graph()
    assert _find_cycle(graph) is None


def test_no_package_cycle_in_the_app_at_any_level() -> None:
    """A package and its own subpackage count: rtool.app's modules import app.commands, so
    nothing under app.commands imports a module of rtool.app itself."""
    graph, package = _graph()
    packages: dict[str, set[str]] = defaultdict(set)
    for module, targets in graph.items():
        packages[package[module]] |= {package[t] for t in targets} - {package[module]}
    assert _find_cycle(packages) is None


def test_plumbing_imports_no_command() -> None:
    graph, _ = _graph()
    wrong = {
        m: sorted(t for t in targets if t.startswith(f"{APP}.commands"))
        for m, targets in graph.items()
        if m.startswith(f"{APP}.plumbing")
    }
    assert {m: t for m, t in wrong.items() if t} == {}


def test_one_command_per_module() -> None:
    """Each top-level command has a module of its own, named after it."""
    for name, lazy in COMMANDS.items():
        assert lazy.module == f"{APP}.commands.{name}_cmd", name
        path = ROOT / Path(*lazy.module.split(".")).with_suffix(".py")
        assert path.is_file(), path
