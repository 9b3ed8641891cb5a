"""The app's layout (docs/architecture.md): commands one per module, the CLI's infrastructure
apart in plumbing/ (source parsed with `ast`, nothing imported). No circle among its packages
or modules: tests/test_structure.py, for the whole package."""

from __future__ import annotations

from pathlib import Path

from rtool.app.plumbing.lazy import COMMANDS
from tests.test_structure import ROOT, imports, modules

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
    for name in COMMANDS:
        module = COMMANDS.line(name).where
        assert module == f"{APP}.commands.{name}_cmd", name
        path = ROOT / Path(*module.split(".")).with_suffix(".py")
        assert path.is_file(), path
