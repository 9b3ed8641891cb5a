"""Scanning the cron folder, cleaning logs, and the status table."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from rtool.cron import manage
from rtool.cron.jobs import scan
from rtool.cron.runner import expired, log_slug, remove_old_logs, slurm_outcome


def make_dir(tmp_path: Path) -> Path:
    root = tmp_path / "cron"
    manage.init(root)
    return root


def test_init_creates_layout_with_disabled_examples(tmp_path: Path) -> None:
    root = make_dir(tmp_path)
    for sub in ("cron.hourly", "cron.daily", "cron.weekly", "cron.d", "logs"):
        assert (root / sub).is_dir()
    assert (root / "cron.hourly" / "rtool-watch.sh.example").is_file()
    found = scan(root)
    assert found.jobs == []  # examples are not enabled
    assert found.warnings == []  # ... and not warned about either
    assert manage.init(root) == []  # idempotent, never overwrites


def test_scan_classifies_files(tmp_path: Path) -> None:
    root = make_dir(tmp_path)
    hourly = root / "cron.hourly"
    (hourly / "b.sh").write_text("#!/bin/sh\n")
    (hourly / "b.sh").chmod(0o755)
    (hourly / "a.slurm").write_text("#!/bin/bash\n")
    (hourly / "notes").write_text("not a job")
    (hourly / ".hidden").write_text("")
    (hourly / "sub").mkdir()
    (root / "cron.weekly" / "w.py").write_text("#!/usr/bin/env python3\n")
    (root / "cron.weekly" / "w.py").chmod(0o700)
    (root / "cron.d" / "mine").write_text("*/5 * * * * echo hi\nbad line\n")
    found = scan(root)
    assert [(j.name, j.kind, j.period) for j in found.jobs] == [
        ("cron.hourly/a.slurm", "slurm", "hourly"),
        ("cron.hourly/b.sh", "exec", "hourly"),
        ("cron.weekly/w.py", "exec", "weekly"),
        ("cron.d/mine:1", "line", None),
    ]
    assert sorted(w.split(":")[0] for w in found.warnings) == [
        "cron.d/mine",
        "cron.hourly/notes",
        "cron.hourly/sub",
    ]
    assert [j.name for j in found.find("b.sh")] == ["cron.hourly/b.sh"]


def test_expired_is_pure_and_remove_old_logs_keeps_new_ones(tmp_path: Path) -> None:
    now = 10_000.0
    assert expired([(Path("a"), 100.0), (Path("b"), 9_990.0)], now, keep=60) == [Path("a")]
    logs = tmp_path / "logs"
    (logs / "sub").mkdir(parents=True)
    old, new, nested = logs / "old.log", logs / "new.log", logs / "sub" / "old2.log"
    for p in (old, new, nested):
        p.write_text("x")
    week_ago = time.time() - 8 * 86400
    os.utime(old, (week_ago, week_ago))
    os.utime(nested, (week_ago, week_ago))
    removed = remove_old_logs(logs, time.time(), 7 * 86400)
    assert sorted(removed) == sorted([old, nested])
    assert new.exists() and not old.exists()


def test_slurm_outcome_from_scontrol_record() -> None:
    assert slurm_outcome({"JobState": "RUNNING", "ExitCode": "0:0"}) is None
    assert slurm_outcome({"JobState": "COMPLETED", "ExitCode": "0:0"}) == ("ok", 0)
    assert slurm_outcome({"JobState": "FAILED", "ExitCode": "3:0"}) == ("failed", 3)
    assert slurm_outcome({"JobState": "TIMEOUT", "ExitCode": "0:15"}) == ("timeout", 0)
    assert log_slug("cron.d/my file:3") == "d-my_file-3"


def test_status_lists_never_run_and_recorded_jobs(tmp_path: Path) -> None:
    now = time.time()
    records = {
        "cron.hourly/a.sh": {
            "start": now - 30,
            "duration": 1.25,
            "exit_code": 3,
            "status": "failed",
            "log": "/x/a.log",
        }
    }
    beat = {"time": now - 30, "lateness": 0.4, "next_slot": now + 30}
    lines = manage.format_status(
        tmp_path, "rtool-cron-x", [], None, beat, records, ["cron.hourly/a.sh", "b.sh"], now
    )
    text = "\n".join(lines)
    assert "NOT QUEUED" in text
    assert "0.4s after its slot" in text
    row = next(ln for ln in lines if ln.startswith("cron.hourly/a.sh"))
    assert "1.2s" in row and " 3 " in row and "failed" in row and "/x/a.log" in row
    assert any(ln.startswith("b.sh") and "never" in ln for ln in lines)


def test_the_examples_suggest_commands_rtool_has() -> None:
    examples = Path(manage.__file__).parent / "examples"
    suggested = [
        ln.split("rtool ", 1)[1].split()
        for name in ("rtool-watch.sh.example", "rtool-watch.cron")
        for ln in (examples / name).read_text().splitlines()
        if ln.startswith("# ") and " rtool watch " in f" {ln} "
    ]
    assert len(suggested) == 5, suggested
    for words in suggested:
        sub = words[:2]  # "watch all", "watch job" ...
        got = subprocess.run(
            [sys.executable, "-m", "rtool", *sub, "--help"], capture_output=True, text=True
        )
        assert got.returncode == 0, (words, got.stderr)
        needs_path = "PATH..." in got.stdout
        assert not needs_path or (len(words) > 2 and not words[2].startswith("|")), words
