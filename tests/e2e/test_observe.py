"""The demo's step accounting and parsers, on hand-written logs (pure, fast)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devtools.demo.inbox import log_title
from devtools.demo.observe import account, compress, parse_output, parse_steps, saves_by_pid
from devtools.demo.run import main as demo_main
from devtools.demo.workspace import Timing, Workspace, config_text, hourly_script
from rtool.app.plumbing.appconfig import load_config_text
from tests.e2e.conftest import ROOT


def _steps(*runs: tuple[int, range]) -> str:
    return "".join(f"step={s} job=9 task={pid % 10} pid={pid}\n" for pid, r in runs for s in r)


def test_signal_resume_and_a_hang_account_exactly() -> None:
    # run 101: steps 0-9, saved 9 (signal); run 102: 10-19, saved 14 (save switch), hung at 20;
    # run 103 resumes at 15 (15-19 redone) and is stopped at 25 with a save.
    text = _steps((101, range(10)), (102, range(10, 20)), (103, range(15, 26)))
    acc = account(parse_steps(text), {101: [9], 102: [14], 103: [25]})
    assert acc.ok and acc.lost == 0
    assert acc.redone == [15, 16, 17, 18, 19]
    assert acc.run_twice_after_save == [] and acc.bad_resumes == []
    assert acc.resumes == [(101, 0), (102, 10), (103, 15)]
    assert acc.final_checkpoint == 25 and acc.last_step == 25


def test_a_step_rerun_below_a_save_is_caught() -> None:
    text = _steps((101, range(10)), (102, range(8, 12)))
    acc = account(parse_steps(text), {101: [9], 102: [11]})
    assert not acc.ok
    assert acc.run_twice_after_save == [8, 9]
    assert acc.bad_resumes == ["pid 102 started at step 8, the last save was step 9"]


def test_a_checkpoint_past_steps_never_run_loses_them() -> None:
    text = _steps((101, range(5)), (102, range(7, 12)))
    acc = account(parse_steps(text), {101: [6], 102: [9]})
    assert acc.holes == [5, 6] and acc.lost == 2 and not acc.ok
    assert acc.discarded == [10, 11]  # run, not saved: the next resume redoes them


def test_work_of_a_hung_run_after_its_last_save_is_discarded_not_lost() -> None:
    text = _steps((101, range(12)), (102, range(8, 10)))
    acc = account(parse_steps(text), {101: [7], 102: [9]})
    assert acc.ok and acc.lost == 0
    assert acc.redone == [8, 9] and acc.discarded == [10, 11]


def test_torn_lines_are_skipped() -> None:
    text = "step=0 job=1 task=0 pid=5\nstep=1 job=1 ta"
    assert [s.step for s in parse_steps(text)] == [0]


def test_output_of_a_requeued_task_keeps_both_runs() -> None:
    text = "\n".join(
        [
            "starting at step 120 of 100000 (job=33 task=1 pid=700)",
            "step 120 loss 0.008",
            "saved step 124",
            "hanging at step 131",
            "rtool: 2026-01-01 10:00:00 batch shell got SIGUSR1; forwarding it",
            "rtool: kill switch /w/kill-switch is present; exiting without starting the run",
        ]
    )
    out = parse_output(text)
    assert out.kill_switch_exits == 1
    (run,) = out.runs
    assert (run.pid, run.task, run.start, run.saves, run.hang) == (700, "1", 120, [124], 131)
    assert run.signal == "USR1" and not run.finished
    assert saves_by_pid([out]) == {700: [124]}


def test_compress() -> None:
    assert compress([3, 1, 2, 7, 9, 8]) == "1-3, 7-9"
    assert compress([]) == ""


def test_log_channel_line_to_title() -> None:
    line = "2026-11-21T20:00:56 [rtool RESOLVED] log a/*.out: a/1.out written 0s ago key=log:a"
    assert log_title(line) == "[rtool RESOLVED] log a/*.out: a/1.out written 0s ago"


def test_config_is_valid_and_quotes_paths() -> None:
    ws = Workspace(Path('/tmp/odd "dir" $(x)'))
    cfg = load_config_text(config_text(ws, Timing(), 2525, True))
    assert cfg.state.dir == str(ws.state)
    assert cfg.cron.periods.hourly == 4
    assert cfg.watch.log[0].on_hang == "requeue" and cfg.watch.log[0].stale == 8
    assert cfg.notify.email is not None and cfg.notify.email.port == 2525
    assert "'/tmp/odd \"dir\" $(x)/bin/rtool'" in hourly_script(ws)


def test_demo_refuses_a_folder_that_is_not_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "old").write_text("x")
    assert demo_main(["--dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"demo: --dir {tmp_path}: not an empty folder; give a new one"
    ]


def test_demo_starts_from_the_checkout_not_from_rtool(cli: Callable[..., Any]) -> None:
    """scripts/demo's last line, `python -m devtools.demo`, with its options and an example;
    the installed CLI has no demo command."""
    res = subprocess.run(
        [sys.executable, "-m", "devtools.demo", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: scripts/demo [-h] [--dir DIR] [--with-servers] [--keep]")
    assert "Example: scripts/demo --with-servers --dir /tmp/rtool-demo" in res.stdout
    assert 'exec python -m devtools.demo "$@"' in (ROOT / "scripts" / "demo").read_text()
    assert cli("demo", "--help").code == 2  # no such command
