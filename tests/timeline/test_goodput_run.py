"""The timeline of a real run: the ledger `rtool watch run` stored during `bench/goodput.py`
(the rtool setup, on the local 3-node Slurm with accounting; goodput-ledger.json, as written,
taken 55 steps before the run's end): 1-minute tasks stopped at their time limits, a hang
requeued by `rtool watch log --on-hang requeue`, an injected crash and a node failure. Its page
shows each of them, in the chart and in the time lost by cause."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.timeline.browser import chromium, count, load

LEDGER = Path(__file__).with_name("goodput-ledger.json")
RUN = json.loads(LEDGER.read_text())["run"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def page_of_the_run(cli: Any, folder: Path) -> Path:
    """`rtool history RUN --stored --html` over a state dir holding the real ledger."""
    (folder / "state" / "runs").mkdir(parents=True)
    shutil.copy(LEDGER, folder / "state" / "runs" / f"{RUN}.json")
    (folder / "state" / "runs").chmod(0o700)
    config = folder / "rtool.toml"
    config.write_text(f'[state]\ndir = "{folder / "state"}"\n')
    page = folder / "timeline.html"
    res = cli("--config", str(config), "history", RUN, "--stored", "--html", str(page))
    assert res.code == 0, res.err
    return page


def test_crash_hang_node_failure_and_time_limits_on_the_page(
    browser: Any, cli: Any, tmp_path: Path
) -> None:
    page = page_of_the_run(cli, tmp_path)
    seen = load(browser, page)
    assert seen.console == [] and seen.fetched == []
    ends = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.timeline .end'))"
        ".map(function(e){return [e.getAttribute('data-attempt'), e.getAttribute('data-cause')]})"
    )
    assert dict(ends) == {
        "1": "time limit", "2": "hang", "3": "time limit", "4": "crash",
        "5": "time limit", "6": "node failure", "7": "time limit", "8": "running",
    }  # fmt: skip
    lost = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.losses tr[data-cause]'))"
        ".map(function(r){return [r.getAttribute('data-cause'), r.cells[2].textContent]})"
    )
    assert dict(lost) == {"hang": "53", "crash": "48", "node failure": "48", "time limit": "0"}
    assert count(browser, "svg.timeline line.lost") == 3  # the steps done again, dashed
    lanes = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.timeline rect.lane'))"
        ".map(function(r){return r.getAttribute('data-attempt')})"
    )
    assert sorted(lanes, key=int) == [str(n) for n in range(1, 9)]
    row = browser.find_element("css selector", 'table.attempts tr[data-attempt="4"]')
    assert "RuntimeError: injected crash at step 1558" in row.text
