"""The screenshot in docs/runs.md: the timeline page of the real run in goodput-ledger.json,
rendered by `rtool history --html` and photographed by headless Chromium.

    python -m tests.timeline.screenshot docs/timeline.png
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from rtool.app.cli import main as rtool
from tests.timeline.browser import chromium
from tests.timeline.test_goodput_run import LEDGER, RUN

WIDTH = 1100


def shoot(out: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="rtool-shot-"))
    try:
        runs = folder / "state" / "runs"
        runs.mkdir(parents=True, mode=0o700)
        shutil.copy(LEDGER, runs / f"{RUN}.json")
        (folder / "rtool.toml").write_text(f'[state]\ndir = "{folder / "state"}"\n')
        page = folder / "timeline.html"
        code = rtool(["--config", str(folder / "rtool.toml"), "history", RUN, "--stored",
                      "--html", str(page)])  # fmt: skip
        if code != 0:
            raise SystemExit(f"rtool history exited {code}")
        with chromium() as driver:
            driver.get(page.as_uri())
            height = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(WIDTH, int(height) + 120)
            driver.save_screenshot(str(out))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    shoot(Path(sys.argv[1]))
