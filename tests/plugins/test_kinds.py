"""A new plug-in of each kind is one module and one registry line, and nothing else.

Each test copies the tree (rtool/), adds one throw-away plug-in exactly as docs/architecture.md
says (its module, and one line in its registry; the whole copy is compared with the tree, so
nothing else may differ), and runs driver.py in
a fresh interpreter on the copy: the plug-in must show up in the CLI and its help (following
the help rules), in config validation, in the docs' reference tables, and pass its kind's
contract (tests/plugins/contract.py). The watchdog is the worked example of
docs/architecture.md, taken from the page itself.
"""

from __future__ import annotations

import ast
import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.plugins.kinds import ROOT, Kind, kinds

KINDS = kinds()


def add_line(source: str, variable: str, line: str) -> str:
    """`source` with `line` added as the last item of the tuple or dict `variable`."""
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == variable for t in targets):
            assert node.value is not None and node.value.end_lineno is not None
            lines = source.splitlines(keepends=True)
            closing = node.value.end_lineno - 1
            assert lines[closing].strip() in (")", "}"), lines[closing]
            lines.insert(closing, f"    {line}\n")
            return "".join(lines)
    raise LookupError(f"no {variable} = (...) in the registry")


def tree(root: Path, under: str = "") -> dict[str, bytes]:
    """Every file below root/under (relative to root), caches left out."""
    base = root / under if under else root
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in base.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def changed(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    """The files added, removed or changed between two trees."""
    return {n for n in before.keys() | after.keys() if before.get(n) != after.get(n)}


def with_plugin(kind: Kind, work: Path) -> Path:
    """A copy of the tree under work/src with the plug-in added; returns work/src. The whole
    copy is compared with the tree: the new module (and its package's empty `__init__.py`)
    and one added line in the registry are the only differences."""
    src = work / "src"
    shutil.copytree(ROOT / "rtool", src / "rtool", ignore=shutil.ignore_patterns("__pycache__"))
    module = src / kind.module
    module.parent.mkdir(parents=True, exist_ok=True)
    if module.parent != src and not (module.parent / "__init__.py").exists():
        (module.parent / "__init__.py").write_text("")
    module.write_text(kind.source)
    registry = src / kind.registry
    before = registry.read_text()
    registry.write_text(add_line(before, kind.variable, kind.line))
    diff = list(difflib.ndiff(before.splitlines(), registry.read_text().splitlines()))
    edits = [d for d in diff if d.startswith(("+ ", "- "))]
    assert edits == [f"+     {kind.line}"]  # one line added to the registry, nothing else
    new_package = {f"{Path(kind.module).parent.as_posix()}/__init__.py"} - {"./__init__.py"}
    allowed = {kind.registry, kind.module} | (new_package - set(tree(ROOT, "rtool")))
    assert changed(tree(ROOT, "rtool"), tree(src)) == allowed, "the copy differs elsewhere"
    return src


def run_driver(kind: str, tmp_path: Path) -> dict[str, Any]:
    work = tmp_path / "work"
    (work / "home").mkdir(parents=True)
    src = with_plugin(KINDS[kind], work)
    env = {
        **os.environ,
        "PYTHONPATH": f"{src}{os.pathsep}{ROOT}",
        "HOME": str(work / "home"),
        "XDG_STATE_HOME": str(work / "state"),
        "COLUMNS": "250",
    }
    res = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "plugins" / "driver.py"), kind, str(work)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=work,
        env=env,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    result: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    assert result["rtool_file"].startswith(str(src)), "the copy was not the rtool imported"
    return result


def test_a_watchdog(tmp_path: Path) -> None:
    """The worked example of docs/architecture.md (it copies the `timeout` field that crashed
    `rtool watch --help` before)."""
    r = run_driver("watchdog", tmp_path)
    assert r["group_help"][0] == 0 and "ckpt " in r["group_help"][1]
    code, page, _ = r["help"]
    assert code == 0 and page.count("--timeout") == 1
    assert "(default: 2h)" in page and "Example: rtool watch ckpt" in page
    code, out, _ = r["stale"]
    assert code == 2 and out.startswith("CKPT CRITICAL - ") and "newest checkpoint 3h old" in out
    assert r["fresh"][0] == 0 and r["fresh"][1].startswith("CKPT OK - ")
    assert r["missing"][0] == 2 and "no checkpoint" in r["missing"][1]
    assert r["timeout"][0] == 2
    assert r["config_ok"][0] == 0, r["config_ok"][1]
    assert r["config_bad"][0] == 2 and "watch.ckpt.0.bogus" in r["config_bad"][1]
    assert r["all"][0] == 0 and r["all"][1].startswith("CKPT OK - "), r["all"]
    assert "| `rtool watch ckpt` | `[[watch.ckpt]]` | Is the newest checkpoint" in r["docs"]
    assert "| `max_age` | `--max-age` | `2h` |" in r["docs"]
    assert r["contract"] == []


def test_a_preflight_check(tmp_path: Path) -> None:
    r = run_driver("check", tmp_path)
    code, page, _ = r["help"]
    assert code == 0 and "--max-load" in page and "[nodes.preflight] max_load" in page
    assert r["healthy"][0] == 0 and "ok   load: " in r["healthy"][1], r["healthy"]
    assert r["busy"][0] == 1 and "FAIL load: " in r["busy"][1]
    assert r["from_config"][0] == 0 and "load: " in r["from_config"][1]
    assert r["config_ok"][0] == 0
    assert r["config_bad"][0] == 2 and "nodes.preflight.max_load" in r["config_bad"][1]
    code, out, err = r["node_side"]
    assert code == 0 and '"check": "load"' in out, err
    assert r["node_argv"] == ["--max-load", "2.5"]
    # the pre-flight before training is in the script only when a check applies (the check
    # before an in-place restart is there either way: it also looks at node states and logs)
    before = "pre-flight on every allocated node"
    assert r["submit_asked"][0] == 0 and before in r["submit_asked"][1]
    assert r["submit_plain"][0] == 0 and before not in r["submit_plain"][1]
    assert "| `load` | the 1-minute load average per CPU" in r["docs"]
    assert "| `max_load` |" in r["docs"]
    assert r["contract"] == []


def test_a_channel(tmp_path: Path) -> None:
    r = run_driver("channel", tmp_path)
    assert r["help"][0] == 0 and "jsonl" in r["help"][1]
    assert r["config_ok"][0] == 0, r["config_ok"][1]
    assert r["config_bad"][0] == 2 and "notify.jsonl.bogus" in r["config_bad"][1]
    assert r["test"][0] == 0 and "jsonl: OK" in r["test"][1], r["test"]
    assert r["alert"][0] == 2
    docs = [json.loads(line) for line in r["lines"]]
    assert [d["kind"] for d in docs] == ["test", "alert"]
    assert docs[1]["key"].startswith("disk:") and docs[1]["status"] == "CRITICAL"
    assert "| `[notify.jsonl]` | One JSON document" in r["docs"]
    assert "`path` (required)" in r["docs"]
    assert r["contract"] == []


def test_a_watch_command(tmp_path: Path) -> None:
    r = run_driver("watch-command", tmp_path)
    assert "here " in r["group_help"][1]
    code, out, _ = r["run"]
    assert code in (0, 1, 2) and "DISK " in out and "MEMORY " in out, r["run"]
    assert "| `rtool watch here` | | The disk of the current folder" in r["docs"]
    assert r["contract"] == []


def test_a_command(tmp_path: Path) -> None:
    r = run_driver("command", tmp_path)
    assert "Where rtool finds its config and keeps its state." in r["root_help"][1]
    code, page, _ = r["help"]
    assert code == 0 and "Where rtool finds its config" in page and "Example: rtool where" in page
    assert r["run"][0] == 0 and "config: none (built-in defaults)" in r["run"][1]
    assert "| `rtool where` | Where rtool finds its config" in r["docs"]
    assert r["contract"] == []


def test_a_failure_signature(tmp_path: Path) -> None:
    """Its line among later symptoms is the attempt's root cause, and it makes the node suspect."""
    r = run_driver("signature", tmp_path)
    name, label, line, action = r["signature"]
    assert (name, label) == ("ib-down", "InfiniBand link down") and "ib0: Link down" in line
    assert action == "have the node's InfiniBand link checked; resubmit away from it"
    assert r["suspects"] == ["n2"] and "ib-down" in r["node_level"]
    assert r["names"][-1] == "ib-down"
    assert r["contract"] == []


def test_a_config_section(tmp_path: Path) -> None:
    r = run_driver("section", tmp_path)
    assert r["config_ok"][0] == 0, r["config_ok"][1]
    code, out = r["config_bad"]
    assert code == 2 and "site.max_jobs" in out and "site.bogus" in out
    code, shown, _ = r["show"]
    assert code == 0 and '[site]\nscratch = "/lustre/me"\nmax_jobs = 3' in shown
    assert '[site]\nscratch = "/scratch"\nmax_jobs = 10' in r["show_defaults"][1]
    assert r["defaults"] == {"scratch": "/scratch", "max_jobs": 10}
    assert r["field_help"] == "How many jobs one user may queue."
    assert r["contract"] == []


def test_the_copy_may_differ_only_by_the_plugin(tmp_path: Path) -> None:
    """The whole-tree check of with_plugin sees an edit anywhere else in the copy."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "rtool", src / "rtool", ignore=shutil.ignore_patterns("__pycache__"))
    assert changed(tree(ROOT, "rtool"), tree(src)) == set()
    (src / "rtool" / "core" / "units.py").write_text("# edited\n", "utf-8")
    (src / "rtool" / "extra.py").write_text("")
    assert changed(tree(ROOT, "rtool"), tree(src)) == {"rtool/core/units.py", "rtool/extra.py"}


def test_a_line_goes_into_its_registry() -> None:
    src = 'X = 1\nLINES: tuple[str, ...] = (\n    "a",\n)\nD = {\n    "k": 1,\n}\n'
    assert add_line(src, "LINES", '"b",') == src.replace('"a",\n', '"a",\n    "b",\n')
    assert '    "z": 2,\n}' in add_line(src, "D", '"z": 2,')
    with pytest.raises(LookupError):
        add_line(src, "NOPE", "x")
