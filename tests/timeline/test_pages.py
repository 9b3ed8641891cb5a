"""The run timeline (`rtool history RUN --html`) and the status page (`rtool status --html`)
in a real headless Chromium: they render (the timeline laid out, one mark per attempt), with no
console message at all, fetch nothing, and hold for runs of 1, 50 and 500 attempts."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rtool.core.state import StateDir
from rtool.runs import store
from rtool.runs.endings import cause_of
from rtool.runs.model import Ledger
from rtool.runs.signatures.base import Signature
from tests.timeline.browser import chromium, count, load
from tests.timeline.ledgers import ledger


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def _config(tmp_path: Path, *ledgers: Ledger, extra: str = "") -> Path:
    state = StateDir(tmp_path / "state")
    for led in ledgers:
        store.save(state, led)
    config = tmp_path / "rtool.toml"
    config.write_text(f'[state]\ndir = "{tmp_path / "state"}"\n{extra}')
    return config


def _history_page(cli: Any, tmp_path: Path, led: Ledger) -> Path:
    config, page = _config(tmp_path, led), tmp_path / "run.html"
    res = cli("--config", str(config), "history", led.run, "--stored", "--html", str(page))
    assert res.code == 0, res.err
    assert res.out == f"wrote {page}: run {led.run}, {len(led.attempts)} attempt(s)\n"
    return page


def test_the_harness_sees_console_errors_and_fetches(browser: Any, tmp_path: Path) -> None:
    """The checks below can fail: a broken script and a fetched image are seen."""
    bad = tmp_path / "bad.html"
    (tmp_path / "dot.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    bad.write_text('<img src="dot.svg"><script>notDefined()</script>')
    seen = load(browser, bad)
    assert any("notDefined" in m["message"] for m in seen.console), seen.console
    assert [Path(u).name for u in seen.fetched] == ["dot.svg"]


@pytest.mark.parametrize("n", [1, 50, 500])
def test_run_timeline_renders_without_console_messages(
    browser: Any, cli: Any, tmp_path: Path, n: int
) -> None:
    led = ledger(n, running=n != 50)
    page = _history_page(cli, tmp_path, led)
    start = time.monotonic()
    seen = load(browser, page)
    took = time.monotonic() - start
    assert seen.console == [], seen.console
    assert seen.fetched == []
    assert seen.width > 500, "the timeline is not laid out"
    assert count(browser, "svg.timeline line.att") == n
    assert count(browser, "table.attempts tr[data-attempt]") == n
    over = sum(1 for a in led.attempts if a.is_over)
    assert count(browser, "svg.timeline .end") == over + (1 if n != 50 else 0)
    causes = {cause_of(a).value for a in led.attempts}
    shown = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.timeline .end'))"
        ".map(function(e){return e.getAttribute('data-cause')})"
    )
    assert set(shown) == causes
    losses = {c for c in causes if c not in ("running", "finished")}
    assert count(browser, "table.losses tr[data-cause]") == len(losses)
    assert took < 30, f"{n} attempts took {took:.1f}s to load"


def test_hovering_an_attempt_marks_it_in_the_chart(browser: Any, cli: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    page = _history_page(cli, tmp_path, ledger(12))
    load(browser, page)
    row = browser.find_element("css selector", 'table.attempts tr[data-attempt="6"]')
    ActionChains(browser).move_to_element(row).perform()
    marked = browser.execute_script(
        "return document.querySelector('svg.timeline line.att[data-attempt=\"6\"]')"
        ".classList.contains('hl')"
    )
    assert marked is True
    assert browser.get_log("browser") == []


def test_hostile_text_is_shown_as_text(browser: Any, cli: Any, tmp_path: Path) -> None:
    led = ledger(3, run="x", running=False)
    evil = '<script>document.title="owned"</script><img src=x onerror=alert(1)>"'
    sig = Signature("python-exception", evil, evil)
    hostile = {"signature": sig, "nodes": ('n1"><b>x',), "log_tail": (evil, "</pre>" + evil)}
    led.attempts[1] = led.attempts[1].with_(**hostile)
    page = _history_page(cli, tmp_path, led)
    seen = load(browser, page)
    assert seen.console == [] and seen.fetched == []
    assert browser.title == "rtool: run x"
    cell = browser.find_element("css selector", 'tr[data-attempt="2"] td:last-child')
    assert cell.text.startswith(evil[:160]), cell.text
    browser.find_element("css selector", 'tr[data-attempt="2"] summary').click()
    log = browser.find_element("css selector", 'tr[data-attempt="2"] pre')
    assert log.text == evil + "\n</pre>" + evil
    assert count(browser, "img") == 0 and count(browser, "table.attempts b") == 0
    assert count(browser, "script") == 1  # the page's own


def test_status_page_with_every_watched_run(browser: Any, cli: Any, tmp_path: Path) -> None:
    watched, other = ledger(20, run="watched"), ledger(5, run="older", running=False)
    other.updated = 1.0
    extra = '[[watch.run]]\nname = "watched"\n'
    config = _config(tmp_path, other, watched, extra=extra)
    page = tmp_path / "status.html"
    res = cli("--config", str(config), "status", "--html", str(page))
    assert res.code == 0, res.err
    assert res.out.startswith(f"wrote {page}: status ") and res.out.endswith(", 2 run(s)\n")
    seen = load(browser, page)
    assert seen.console == [] and seen.fetched == []
    runs = browser.execute_script(
        "return Array.from(document.querySelectorAll('section.run'))"
        ".map(function(s){return s.getAttribute('data-run')})"
    )
    assert runs == ["watched", "older"]
    parts = browser.execute_script(
        "return Array.from(document.querySelectorAll('section.part'))"
        ".map(function(s){return s.getAttribute('data-part')})"
    )
    assert parts[:7] == ["jobs", "cron", "alerts", "disks", "memory", "switches", "outbox"]
    assert count(browser, "svg.timeline") == 2


def test_bad_html_targets_are_one_line(cli: Any, tmp_path: Path) -> None:
    config = _config(tmp_path, ledger(2, run="r"))
    for target, why in (
        (tmp_path / "nope" / "page.html", "no such folder"),
        (tmp_path, "is a folder"),
    ):
        res = cli("--config", str(config), "history", "r", "--stored", "--html", str(target))
        assert res.code == 2 and why in res.err and len(res.err.strip().splitlines()) == 1
    link = tmp_path / "link.html"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    link.symlink_to(victim)
    res = cli("--config", str(config), "history", "r", "--stored", "--html", str(link))
    assert res.code == 0 and victim.read_text() == "keep" and not link.is_symlink()


def test_every_way_an_attempt_ends_has_a_colour_and_a_mark() -> None:
    """A new cause (restart in place, say) is one member of `Cause` and one colour here."""
    from rtool.app.timeline.chart import _mark
    from rtool.app.timeline.page import COLOURS
    from rtool.runs.endings import Cause

    assert set(COLOURS) == set(Cause)
    for c in Cause:
        assert f'data-cause="{c.value}"' in _mark(c, 10.0, 10.0, COLOURS[c], "tip", 1, 1.0)
