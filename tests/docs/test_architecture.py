"""docs/architecture.md cannot drift from the code: its table of floors says the floor of every
unit and which units each imports, exactly as RANKS (tests/test_structure.py) and the imports
are; RANKS are the floors the imports make; its count of plug-in kinds is its table's."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from tests.test_structure import RANKS, edges

PAGE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
#: The words the page may count its plug-in kinds in.
NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def full(name: str) -> str:
    """`app` -> `rtool.app`; `rtool` (the version) stays itself."""
    return name if name == "rtool" else f"rtool.{name}"


@cache
def floors_table() -> dict[str, tuple[int, frozenset[str]]]:
    """unit -> (floor, the units it imports) as the page's table of floors writes them."""
    text = PAGE.read_text()
    start = text.index("<!-- floors -->")
    rows = {}
    for line in text[start:].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if not cells[0].isdigit():
            continue  # the header and its rule
        imports = frozenset(full(n) for n in re.findall(r"`([\w.]+)`", cells[2]))
        for name in re.findall(r"`([\w.]+)`", cells[1]):
            rows[full(name)] = (int(cells[0]), imports)
    return rows


def imported() -> dict[str, set[str]]:
    """unit -> the other units it imports (the version, `rtool`, left out)."""
    out: dict[str, set[str]] = {unit: set() for unit in RANKS}
    for src, dst, _ in edges():
        if dst != "rtool":
            out.setdefault(src, set()).add(dst)
    return out


def measured_floors() -> dict[str, int]:
    """Each unit's floor by its imports: 0 when it imports no unit, else one above the
    highest it imports."""
    graph, floors = imported(), {}

    def floor(unit: str) -> int:
        if unit not in floors:
            floors[unit] = 1 + max((floor(d) for d in graph.get(unit, ())), default=-1)
        return floors[unit]

    return {unit: floor(unit) for unit in graph}


def test_ranks_are_the_floors_the_imports_make() -> None:
    measured = measured_floors()
    wrong = {u: (RANKS.get(u), f) for u, f in measured.items() if RANKS.get(u) != f}
    assert not wrong, f"unit: (RANKS, floor by its imports), fix RANKS and the page: {wrong}"


def test_the_pages_floors_are_the_ranks() -> None:
    table = {unit: floor for unit, (floor, _) in floors_table().items()}
    assert table == RANKS, "docs/architecture.md's table of floors differs from RANKS"


def test_the_pages_imports_are_the_imports() -> None:
    graph = imported()
    wrong = {
        u: (sorted(written), sorted(graph.get(u, ())))
        for u, (_, written) in floors_table().items()
        if written != graph.get(u, set())
    }
    assert not wrong, f"unit: (the page says it imports, it imports): {wrong}"


def test_the_pages_count_of_plugin_kinds_is_its_table() -> None:
    text = PAGE.read_text()
    section = text[text.index("### Plug-ins") :]
    said = re.search(r"\b(\w+) kinds of thing\b", section)
    assert said is not None
    table = section[section.index("| kind |") :].split("\n\n")[0].splitlines()[2:]
    assert said.group(1).lower() == NUMBERS[len(table)], (said.group(1), len(table))


def test_the_checks_read_the_page() -> None:
    table = floors_table()
    assert table["rtool.core"] == (0, frozenset())
    assert table["rtool.app"][0] == max(RANKS.values()) - 1
    assert "rtool.runs" in table["rtool.nodes"][1]
