"""Every registered failure signature (rtool/runs/signatures/, issue 25 finding 7 and issue 29):
its own real lines and near misses, the shared corpus (tests/runs/corpus/), the linear-time rule,
the node-level list derived from the declarations, the docs table, and a throw-away plug-in."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest

from rtool.core.linear import problem
from rtool.core.state import StateDir
from rtool.nodes import node_fault
from rtool.nodes.store import SuspectStore
from rtool.runs import ledger, signatures
from rtool.runs.model import Attempt
from rtool.runs.signatures.base import Declared
from rtool.watchdogs.jobnodes import record_signatures

CORPUS = Path(__file__).parent / "corpus"
ROOT = Path(__file__).resolve().parents[2]
DECLARED = signatures.declared()


def _corpus(name: str) -> list[str]:
    lines = (CORPUS / name).read_text().splitlines()
    return [ln for ln in lines if ln.strip() and not ln.startswith("# ")]


REAL = [tuple(ln.split("\t", 1)) for ln in _corpus("real.txt")]
NEAR = _corpus("near_misses.txt")


@pytest.mark.parametrize("decl", DECLARED, ids=[d.name for d in DECLARED])
def test_each_signature_matches_its_examples_and_not_its_near_misses(decl: Declared) -> None:
    assert decl.examples and decl.near_misses, f"{decl.name}: declare real lines and near misses"
    regex = decl.compiled().regex
    for line in decl.examples:
        got = signatures.match([line])
        assert got is not None and got.name == decl.name, (line, got)
    for line in [*decl.near_misses, *NEAR]:
        assert not regex.search(line), f"{decl.name} matches the near miss {line!r}"
    assert problem(regex) is None, f"{decl.name}: {problem(regex)}"


@pytest.mark.parametrize(("name", "line"), REAL, ids=[f"{n}:{i}" for i, (n, _) in enumerate(REAL)])
def test_the_corpus_of_real_lines(name: str, line: str) -> None:
    got = signatures.match([line])
    assert got is not None and got.name == name, got


@pytest.mark.parametrize("line", NEAR)
def test_no_signature_matches_an_ordinary_line(line: str) -> None:
    got = signatures.match([line], "FAILED")
    assert got is None or got.name not in {p.name for p in signatures.DEFAULTS}, got


def test_a_healthy_node_is_not_made_suspect_by_ordinary_text(tmp_path: Path) -> None:
    """`KeyError: 'xid'` or a comment about NCCL timeouts made the node suspect (finding 7)."""
    store = SuspectStore(StateDir(tmp_path / "state"))
    now = time.time()
    for i, line in enumerate(NEAR):
        a = Attempt(run="r", number=i, job_id=f"{i + 1}", nodes=("n1",), state="FAILED")
        (signed,) = ledger._signatures([a.with_(log_tail=(line,), ended=now)], None, ())
        store.record_many(record_signatures([signed]))
    assert store.suspects() == []
    xid = Attempt(run="r", number=1, job_id="77", nodes=("n2",), state="FAILED", ended=now)
    xid_line = next(line for name, line in REAL if name == "xid")
    (signed,) = ledger._signatures([xid.with_(log_tail=(xid_line,))], None, ())
    store.record_many(record_signatures([signed]))
    assert [s.node for s in store.suspects()] == ["n2"]


def test_the_registry_is_every_module_once_and_node_level_is_derived() -> None:
    package = Path(signatures.__file__).parent
    modules = {p.stem for p in package.glob("*.py")} - {"__init__", "base", "rootcause"}
    lines = {where.partition(":")[0].rsplit(".", 1)[1] for where in signatures.LINES.values()}
    assert modules == lines, "one module = one line in LINES"
    names = [d.name for d in DECLARED]
    assert len(names) == len(set(names))
    assert {d.name for d in DECLARED if d.node_level} == node_fault.NODE_LEVEL
    assert {"xid", "ecc", "gpu-lost", "node-failure"} <= node_fault.NODE_LEVEL
    assert not {"nccl-timeout", "nccl-error", "xid-app", "cuda-fault"} & node_fault.NODE_LEVEL


def test_the_docs_table_lists_every_signature() -> None:
    docs = (ROOT / "docs" / "runs.md").read_text()
    for d in DECLARED:
        row = re.search(rf"^\| `{re.escape(d.name)}` \|.*\| (yes|no) \|$", docs, re.M)
        assert row, f"docs/runs.md: no row for `{d.name}`"
        assert (row.group(1) == "yes") == d.node_level, d.name


def test_a_new_signature_is_one_module_and_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "site_sigs"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "site_full.py").write_text(
        "from rtool.runs.signatures.base import Declared\n"
        "SIGNATURE = Declared(name='site-full', label='site disk full',\n"
        "    pattern=r'OSError: \\[Errno 28\\] No space left on device',\n"
        "    examples=('OSError: [Errno 28] No space left on device',),\n"
        "    near_misses=('# No space left on device is handled',))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        site = signatures.SIGNATURES.plus({"site-full": "site_sigs.site_full:SIGNATURE"})
        decl = signatures.declared(site)[-1]
    finally:
        sys.modules.pop("site_sigs.site_full", None)
        sys.modules.pop("site_sigs", None)
    assert decl.name == "site-full" and len(site) == len(signatures.SIGNATURES) + 1
    pattern = decl.compiled()
    got = signatures.match(["OSError: [Errno 28] No space left on device"], extra=[pattern])
    assert got is not None and got.name == "site-full" and not decl.node_level


@pytest.mark.parametrize(
    ("pattern", "ok"),
    [
        ("No space left on device", True),
        ("NCCL.{0,200}timed? ?out", True),
        (r"(\w+\s?)*$", False),
        ("(a|a)*b", False),
        (r"(x+)+y", False),
        (r"(a)\1", False),
        ("x" * 1001, False),
    ],
)
def test_config_signatures_follow_the_linear_time_rule(
    cli: object, tmp_path: Path, pattern: str, ok: bool
) -> None:
    cfg = tmp_path / "rtool.toml"
    quoted = pattern.replace("\\", "\\\\")
    cfg.write_text(f'[[runs.signature]]\nname = "mine"\nlabel = "mine"\npattern = "{quoted}"\n')
    res = cli("--config", str(cfg), "config", "check")  # type: ignore[operator]
    assert res.code == (0 if ok else 2), res.err
    if not ok:
        assert "runs.signature.0.pattern" in res.err and "Traceback" not in res.err
