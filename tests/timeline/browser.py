"""A real headless browser for the page tests: Debian's Chromium driven through chromedriver
(selenium), started the way this machine allows (no sandbox as root, no background network:
the network is closed, and those connections would fail loudly)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1200,900",
)


@contextmanager
def chromium() -> Iterator[Any]:
    """A fresh Chromium (its own profile folder), quit after; fails loudly when missing."""
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service

    for binary in (CHROMIUM, CHROMEDRIVER):
        if not Path(binary).exists():
            pytest.fail(f"{binary} is missing: scripts/setup installs chromium and chromium-driver")
    profile = tempfile.mkdtemp(prefix="rtool-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    except WebDriverException as exc:
        shutil.rmtree(profile, ignore_errors=True)
        pytest.fail(f"headless Chromium did not start: {exc.msg}", pytrace=False)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@dataclass
class Loaded:
    console: list[dict[str, Any]]  # every console message (errors, warnings, logs)
    fetched: list[str]  # what the page asked for besides itself (DevTools' network log)
    width: float  # of the timeline's SVG as laid out


def load(driver: Any, page: Path) -> Loaded:
    """Open the page, wait for it to be complete, read the console and what it fetched."""
    driver.get_log("browser")  # drop what an earlier page left
    driver.get_log("performance")
    url = page.resolve().as_uri()
    driver.get(url)
    driver.execute_script("return document.readyState")
    console = driver.get_log("browser")
    fetched = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        params = msg.get("params", {})
        if msg.get("method") == "Network.requestWillBeSent" and params.get("documentURL") == url:
            asked = params["request"]["url"]
            if asked != url:  # the page itself
                fetched.append(asked)
    width = driver.execute_script(
        "var s = document.querySelector('svg.timeline');"
        "return s ? s.getBoundingClientRect().width : 0;"
    )
    return Loaded(console, fetched, float(width))


def count(driver: Any, selector: str) -> int:
    return int(driver.execute_script(f"return document.querySelectorAll({selector!r}).length"))
