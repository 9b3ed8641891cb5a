"""docs/upgrading.md made true: what rtool 0.1 left behind is read (state dir, run ledgers,
heartbeats, its cron tick command), what a newer rtool wrote in a format this one does not know
is refused with one line, and a run records which rtool watched it and which trained it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import rtool
from rtool.core.heartbeat import read_heartbeat
from rtool.core.state import STATE_FORMAT, StateDir
from rtool.runs import store
from rtool.runs.config import RunWatch
from rtool.runs.model import LEDGER_FORMAT, Attempt, Ledger
from rtool.runs.sources import refresh
from rtool.shim import Guard

V01_ALERTS = {"disk|what=/scratch": {"status": "CRITICAL", "since": 1700000000.0}}


def _config(tmp_path: Path) -> Path:
    cfg = tmp_path / "rtool.toml"
    cfg.write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')
    return cfg


def test_a_state_dir_of_rtool_01_is_kept_and_marked(tmp_path: Path, cli) -> None:
    state = tmp_path / "state"
    (state / "notify").mkdir(parents=True, mode=0o700)
    alerts = state / "notify" / "alerts.json"
    alerts.write_text(json.dumps(V01_ALERTS))
    res = cli(
        "--config",
        str(_config(tmp_path)),
        "watch",
        "disk",
        str(tmp_path),
        "--no-notify",
        "--max-used",
        "100%",
    )
    assert res.code == 0, res.err
    assert json.loads(alerts.read_text()) == V01_ALERTS  # nothing of 0.1's state was lost
    mark = json.loads((state / "format.json").read_text())
    assert mark == {"format": STATE_FORMAT, "created_by": f"rtool {rtool.__version__}"}


def test_a_state_dir_of_a_newer_rtool_is_refused_with_one_line(tmp_path: Path, cli) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    newer = '{"format": 7, "created_by": "rtool 9.1.0"}'
    (state / "format.json").write_text(newer)
    cfg = str(_config(tmp_path))
    watch = cli("--config", cfg, "watch", "disk", str(tmp_path), "--no-notify")
    status = cli("--config", cfg, "status")
    for res, code in ((watch, 3), (status, 1)):
        assert res.code == code
        assert res.err.count("\n") == 1 and "Traceback" not in res.err, res.err
        assert f"state dir {state} has format 7 (made by rtool 9.1.0)" in res.err
        assert f"rtool {rtool.__version__} reads format {STATE_FORMAT}" in res.err
    assert (state / "format.json").read_text() == newer
    assert sorted(p.name for p in state.iterdir()) == ["format.json"]


def _ledger(run: str) -> Ledger:
    return Ledger(run=run, attempts=[Attempt(run=run, number=1, job_id="41", state="COMPLETED")])


def test_a_ledger_of_rtool_01_is_read_and_a_newer_one_refused(tmp_path: Path, cli) -> None:
    cfg = str(_config(tmp_path))
    state = StateDir(tmp_path / "state")
    old = _ledger("old").to_json()
    for key in ("format", "rtool_version", "shim_version"):  # what 0.1 wrote lacks these
        del old[key]
    state.write_json(store.ledger_file("old"), old)
    shown = cli("--config", cfg, "history", "old", "--stored")
    assert shown.code == 0 and "41" in shown.out, shown.err
    newer = {**_ledger("new").to_json(), "format": LEDGER_FORMAT + 1, "rtool_version": "9.1.0"}
    state.write_json(store.ledger_file("new"), newer)
    res = cli("--config", cfg, "history", "new", "--stored")
    assert res.code == 1 and res.err.count("\n") == 1, res.err
    assert f"run ledger format {LEDGER_FORMAT + 1} (written by rtool 9.1.0)" in res.err
    assert "remove the file (rtool rebuilds it" in res.err


def test_the_run_records_which_rtool_watched_and_trained_it(tmp_path: Path) -> None:
    hb = tmp_path / "hb.json"
    guard = Guard(heartbeat=str(hb), exit=False, poll_interval=0.05)
    try:
        for step in range(3):
            guard.step(step)
        guard.finished()
    finally:
        guard.close()
    beat = read_heartbeat(hb)
    assert beat is not None and beat.rtool_version == rtool.__version__
    state = StateDir(tmp_path / "state")
    spec = RunWatch(name="r", heartbeat=str(hb), accounting="off")
    refresh(spec, state=state, slurm=None, queue=[], now=beat.time + 1)
    stored = state.read_json(store.ledger_file("r"))
    assert stored["format"] == LEDGER_FORMAT
    assert stored["rtool_version"] == stored["shim_version"] == rtool.__version__


def test_a_heartbeat_without_rtool_version_is_read(tmp_path: Path) -> None:
    hb = tmp_path / "hb.json"
    hb.write_text('{"version": 1, "state": "stopped", "time": 5, "last_stop_reason": "signal"}')
    beat = read_heartbeat(hb)
    assert beat is not None and beat.rtool_version is None and beat.stop_reason == "signal"


def test_the_cron_tick_command_of_rtool_01_still_runs(tmp_path: Path) -> None:
    """0.1 queued ticks as `python -c '... from rtool.cli import app ...'`; after an upgrade
    such a pending tick must still run (and then queue the next tick the new way)."""
    entry = "import sys; from rtool.cli import app; app(sys.argv[1:])"
    res = subprocess.run(
        [sys.executable, "-c", entry, "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=False,
    )
    assert res.returncode == 0 and res.stdout.startswith(f"rtool {rtool.__version__} "), res
