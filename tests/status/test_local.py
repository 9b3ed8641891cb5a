"""`rtool status` without Slurm: an empty state dir, alerts and the outbox written by a real
notify run, switch files touched by `rtool stop`/`rtool save`, disk runway from real
`rtool watch` runs on a filling tmpfs, and a switch file on a mount that hangs."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rtool.app.status.view import SCHEMA, failing_cron_jobs
from rtool.core.alert import Alert, Status
from rtool.notify.engine import process
from rtool.runs import names
from tests.servers.fixtures import down_port
from tests.status.conftest import Setup

__all__ = ["down_port"]

TOP_KEYS = {
    "schema",
    "status",
    "time",
    "host",
    "user",
    "state_dir",
    "slurm",
    "jobs",
    "cron",
    "alerts",
    "disks",
    "memory",
    "switches",
    "outbox",
    "nodes",
}


def test_an_empty_state_dir_gives_a_calm_screen_and_no_squeue_call(make_setup):
    s: Setup = make_setup()
    data = s.status()
    assert set(data) == TOP_KEYS and data["schema"] == SCHEMA
    assert data["slurm"] == {"status": None, "squeue_calls": 0, "error": None}
    assert data["jobs"]["watched"] == [] and data["cron"]["started"] is False
    assert data["alerts"] == {"status": "OK", "open": []}
    assert data["disks"] == [] and data["outbox"]["queued"] == 0
    assert data["switches"]["switches"] == []  # each run gets its own at submission
    assert data["memory"]["total_bytes"] > 0 and 0 <= data["memory"]["used_pct"] <= 100
    screen = s.screen()
    assert "no open alerts recorded" in screen and "no jobs watched" in screen
    assert "cron start" in screen and "last delivery never" in screen
    assert "none yet: each run gets its own at rtool submit" in screen
    for alarming in ("CRITICAL", "UNKNOWN", "SET "):
        assert alarming not in screen


def test_a_failing_alert_shows_since_when_and_the_outbox_keeps_what_was_not_delivered(
    make_setup, down_port
):
    s = make_setup(
        f'[notify.email]\nhost = "127.0.0.1"\nport = {down_port}\nstarttls = false\n'
        f'sender = "rtool@example.org"\nto = ["ops@example.org"]\ntimeout = "2s"\n'
    )
    t0 = time.time() - 600
    alert = Alert("disk:/scratch", Status.CRITICAL, "/scratch 91% used (limit 80%)", {}, t0)
    report = process([alert], s.loaded().notify, s.state, now=t0)
    assert report.sent == {"log": 1} and report.queued == {"email": 1}  # the real delivery

    data = s.status()
    assert data["status"] == "CRITICAL"
    [open_alert] = data["alerts"]["open"]
    assert open_alert == {
        "key": "disk:/scratch",
        "status": "CRITICAL",
        "since": t0,
        "notified": True,
        "summary": "/scratch 91% used (limit 80%)",
    }
    box = data["outbox"]
    assert box["status"] == "WARNING" and box["queued"] == 1 and box["oldest_age_s"] >= 600
    assert box["channels"]["email"]["queued"] == 1
    assert box["channels"]["email"]["last_delivery"] is None
    assert "refused" in box["channels"]["email"]["last_error"].lower()
    assert box["channels"]["log"]["sent"] == 1 and box["channels"]["log"]["last_delivery"] == t0
    screen = s.screen()
    assert "ALERTS    CRITICAL   1 open" in screen
    assert "disk:/scratch since " in screen and "(10m ago)" in screen
    assert "/scratch 91% used (limit 80%)" in screen
    assert "email: 1 queued, 0 sent, last delivery never" in screen
    assert "log: 0 queued, 1 sent, last delivery " in screen

    process(
        [Alert("disk:/scratch", Status.OK, "/scratch 50% used", {}, t0 + 60)],
        s.loaded().notify,
        s.state,
        now=t0 + 60,
    )
    assert s.status()["alerts"]["open"] == []


def test_switch_files_touched_by_stop_and_save(make_setup, tmp_path):
    kill = tmp_path / "switches" / "kill-me"
    s = make_setup(f'[switches]\nkill = "{kill}"\n')
    own = names.Submission(
        run="llama",
        job_name="llama",
        job_id="12",
        workdir=str(Path.cwd()),
        kill_switch=str(Path.cwd() / "kill-switch.llama"),
        save_switch=str(Path.cwd() / "save-switch.llama"),
        submitted=time.time(),
    )
    names.save(s.state, own)  # what `rtool submit --run llama` records
    assert s.run("stop").code == 0  # [switches] kill: one switch for every run
    data = s.status()
    by_which = {(w["which"], w["source"]): w for w in data["switches"]["switches"]}
    assert by_which[("kill", "[switches] kill")]["path"] == str(kill)
    assert by_which[("kill", "[switches] kill")]["present"] is True
    assert by_which[("save", "rtool submit")]["path"] == own.save_switch
    assert by_which[("save", "rtool submit")]["present"] is False
    assert data["switches"]["status"] == "WARNING"
    assert s.run("save", "--run", "llama").code == 0
    screen = s.screen()
    assert f"kill  SET      {kill}  ([switches] kill)" in screen
    assert f"save  SET      {own.save_switch}  (rtool submit; llama job 12)" in screen
    os.unlink(kill)
    assert s.status()["switches"]["status"] == "OK"


def test_a_switch_on_a_hung_mount_is_unknown_within_the_timeout(make_setup, hung_lookup_mount):
    s = make_setup(f'[switches]\nkill = "{hung_lookup_mount}/kill-switch"\nsave = "save-switch"\n')
    start = time.monotonic()
    data = s.status("--timeout", "1s")
    assert time.monotonic() - start < 10
    kill, save = data["switches"]["switches"]
    assert kill["present"] is None and "timed out after 1s" in kill["error"]
    assert save["present"] is False  # probed in parallel, not held up by the hung one
    assert data["switches"]["status"] == "UNKNOWN"
    assert data["alerts"]["status"] == "OK" and data["memory"]["status"]  # the rest is shown


def _grow(directory: Path, name: str, nbytes: int) -> None:
    (directory / name).write_bytes(os.urandom(nbytes))


def test_disk_runway_from_the_history_real_watch_runs_recorded(make_setup, tmpfs):
    fs, other = tmpfs("scratch", size="10M"), tmpfs("other", size="10M")
    s = make_setup(
        f'[[watch.disk]]\npath = "{fs}"\nmax_used = "99%"\nrunway = "48h"\ntrend_min_span = "1s"\n'
    )
    data = s.status()
    [entry] = data["disks"]
    assert entry["samples"] == 0 and entry["status"] is None
    assert "no samples yet" in s.screen()
    for i in range(3):
        _grow(fs, f"f{i}", 1024 * 1024)
        assert s.run("watch", "all", "--no-notify").code in (0, 1)  # 1: runway WARNING
        time.sleep(0.6)
    assert s.run("watch", "disk", str(other), "--no-notify").code == 0  # flags only

    scratch, flags_only = s.status()["disks"]
    assert scratch["path"] == str(fs) and scratch["configured"] is True
    assert scratch["samples"] == 3 and scratch["growth_per_day_bytes"] > 0
    assert 0 < scratch["runway_s"] < 48 * 3600 and scratch["status"] == "WARNING"
    assert 25 <= scratch["used_pct"] <= 35 and scratch["free_bytes"] > 0
    assert flags_only["path"] == str(other) and flags_only["configured"] is False
    assert flags_only["samples"] == 1 and flags_only["runway_s"] is None
    screen = s.screen()
    assert "DISKS     WARNING" in screen
    assert f"WARNING   {fs}: 30% used" in screen and "/day" in screen and "full in ~" in screen
    assert f"{other}: 0% used" in screen and "not enough history yet" in screen


def test_failing_cron_jobs_come_from_the_last_run_or_the_last_slurm_outcome():
    records = {
        "cron.hourly/ok.sh": {"status": "ok", "exit_code": 0, "start": 1.0},
        "cron.hourly/bad.sh": {"status": "failed", "exit_code": 3, "start": 2.0, "log": "l"},
        "cron.daily/x.slurm": {
            "status": "submitted",
            "last_outcome": {"status": "timeout", "exit_code": 0},
            "start": 3.0,
        },
        "cron.daily/y.slurm": {"status": "submitted", "start": 4.0},
    }
    got = failing_cron_jobs(records)
    assert [(f["job"], f["status"], f["exit_code"]) for f in got] == [
        ("cron.daily/x.slurm", "timeout", 0),
        ("cron.hourly/bad.sh", "failed", 3),
    ]


def test_a_bad_timeout_is_a_one_line_usage_error(make_setup):
    s = make_setup()
    res = s.run("status", "--timeout", "soon")
    assert res.code == 2 and res.err.startswith("rtool: --timeout") and res.err.count("\n") == 1


def test_help_has_an_example(cli):
    res = cli("status", "--help")
    assert res.code == 0 and "Example: rtool status" in res.out and "--json" in res.out
