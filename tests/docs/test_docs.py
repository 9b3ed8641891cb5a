"""The docs as a reader meets them: a README short enough for a newcomer, a user guide per task,
every relative link pointing at a page (and a heading) that exists, and every measurement on
the benchmarks page, one section per bench/ script."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
GUIDES = ("first-run", "multi-node", "alerts", "cron", "bad-nodes", "frameworks", "troubleshooting")

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_FENCE = re.compile(r"^\s*(```|~~~)")


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def prose(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced blocks, with inline code removed."""
    out: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            out.append((number, _CODE_SPAN.sub("", line)))
    return out


def anchors(page: Path) -> set[str]:
    """The heading anchors GitHub makes for a page (lowercase, punctuation dropped, spaces to
    hyphens, repeats numbered)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in page.read_text().splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(page: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for number, line in prose(page.read_text()):
        for m in _LINK.finditer(line):
            found.append((number, m.group(1) or m.group(2)))
    return found


def test_the_readme_is_short_enough_for_a_newcomer() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) < 300, f"README.md has {len(lines)} lines; move reference detail to docs/"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_and_heading_that_exist(page: Path) -> None:
    broken = []
    for number, target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(ROOT)}:{number}: {target}"
        if not dest.exists():
            broken.append(f"{where} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{where} (no such heading in {dest.name})")
    assert not broken, "\n".join(broken)


def test_the_link_checker_sees_a_broken_link_and_a_broken_anchor(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "# Top\n[ok](#top) [gone](nowhere.md) `[code](x.md)`\n```\n[fenced](y.md)\n```\n"
        "[bad anchor](p.md#bottom) ![img](pic.png)\n"
    )
    assert [t for _, t in links(page)] == ["#top", "nowhere.md", "p.md#bottom", "pic.png"]
    assert anchors(page) == {"top"}


def test_there_is_a_guide_per_task_and_the_readme_and_the_index_link_each() -> None:
    index = (DOCS / "guide" / "README.md").read_text()
    readme = README.read_text()
    for name in GUIDES:
        page = DOCS / "guide" / f"{name}.md"
        assert page.is_file(), page
        assert f"({name}.md)" in index, f"docs/guide/README.md does not link {name}.md"
        assert f"(docs/guide/{name}.md)" in readme, f"README.md does not link the {name} guide"
    assert "(docs/install.md)" in readme and "(../install.md)" in index
    assert "(docs/benchmarks.md)" in readme


def bench_scripts() -> list[str]:
    """The bench/ scripts one runs (a __main__), not the modules they use nor the toy they train."""
    return sorted(
        p.name
        for p in (ROOT / "bench").glob("*.py")
        if "__main__" in p.read_text() and not p.stem.endswith("_toy")
    )


def test_every_bench_script_has_its_section_on_the_benchmarks_page() -> None:
    text = (DOCS / "benchmarks.md").read_text()
    headings = [ln for ln in text.splitlines() if ln.startswith("## ")]
    missing = [s for s in bench_scripts() if not any(f"bench/{s}" in h for h in headings)]
    assert len(bench_scripts()) >= 10
    assert not missing, f"docs/benchmarks.md has no section for {missing}"


def test_measurements_live_on_the_benchmarks_page_only() -> None:
    """The guides and reference pages link to the figures; only benchmarks.md runs a bench."""
    stray = [
        f"{page.relative_to(ROOT)}:{number}"
        for page in pages()
        if page.name != "benchmarks.md"
        for number, line in enumerate(page.read_text().splitlines(), 1)
        if re.search(r"python\s+bench/|^#+ .*\bMeasured\b.*\(", line)
    ]
    assert not stray, f"measurements outside docs/benchmarks.md: {stray}"
