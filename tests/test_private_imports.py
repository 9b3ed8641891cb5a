"""No private import from another package anywhere in rtool/ (issue 40): a typer or click
upgrade must not break rtool through their internals (source parsed with `ast`)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.test_structure import ROOT, modules, parsed

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
