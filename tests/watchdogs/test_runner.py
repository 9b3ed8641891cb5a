"""The runner end to end: `watch all` from a config, worst status wins, --json, --tee, and the
results handed to notify (its log channel shows what it received)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from rtool.core.alert import Status
from rtool.core.state import StateDir
from rtool.watchdogs.base import CheckResult, ProbeEnv
from rtool.watchdogs.runner import exit_code, sweep
from tests.watchdogs.conftest import fill


def write_config(tmp_path: Path, disk: Path, log: Path) -> Path:
    cfg = tmp_path / "rtool.toml"
    cfg.write_text(
        f"""
[state]
dir = "{tmp_path / "state"}"

[notify.log]
path = "{tmp_path / "alerts.log"}"

[watch]
timeout = "5s"

[[watch.disk]]
path = "{disk}"
max_used = "80%"

[[watch.log]]
path = "{log}"
stale = "30m"

[[watch.memory]]
max_used = "99%"
warn_used = "99%"
"""
    )
    return cfg


def test_watch_all_sweeps_every_entry_and_notifies_on_changes(tmpfs, tmp_path, cli):
    disk = tmpfs("scratch")
    log = tmp_path / "train.out"
    log.write_text("step 1\n")
    cfg = write_config(tmp_path, disk, log)
    r = cli("--config", str(cfg), "watch", "all")
    assert r.code == 0, r.out + r.err
    assert [line.split(" - ")[0] for line in r.out.splitlines()] == [
        "LOG OK",
        "DISK OK",
        "MEMORY OK",
    ]
    alerts = tmp_path / "alerts.log"
    fill(disk, 9 * 1024 * 1024)
    r = cli("--config", str(cfg), "watch", "all")
    assert r.code == 2 and f"DISK CRITICAL - {disk} 90% used (limit 80%)" in r.out
    lines = alerts.read_text().splitlines()
    assert len(lines) == 1 and f"key=disk:{disk}" in lines[0] and "CRITICAL" in lines[0]
    r = cli("--config", str(cfg), "watch", "all")  # same state: no second notification
    assert r.code == 2 and len(alerts.read_text().splitlines()) == 1
    (disk / "blob").unlink()
    r = cli("--config", str(cfg), "watch", "all")
    assert r.code == 0
    lines = alerts.read_text().splitlines()
    assert len(lines) == 2 and f"key=disk:{disk}" in lines[1], lines
    assert "RESOLVED" in lines[1]


def test_json_and_tee(tmpfs, tmp_path, cli):
    disk = tmpfs("d")
    tee = tmp_path / "train.log"
    tee.write_text("training output\n")
    r = cli("watch", "disk", str(disk), "--json", "--tee", str(tee), "--no-notify")
    assert r.code == 0
    doc = json.loads(r.out)
    assert doc["status"] == "OK" and doc["code"] == 0
    assert doc["results"][0]["key"] == f"disk:{disk}"
    assert doc["results"][0]["fields"]["used_pct"] == "0.0"
    lines = tee.read_text().splitlines()
    assert lines[0] == "training output"
    assert lines[1].endswith(f"DISK OK - {doc['results'][0]['summary']}")
    assert lines[1][:4].isdigit()  # time-stamped


def test_nothing_to_watch_is_unknown(tmp_path, cli):
    cfg = tmp_path / "empty.toml"
    cfg.write_text("")
    r = cli("--config", str(cfg), "watch", "all")
    assert r.code == 3 and "nothing to watch" in r.err


def test_bad_config_entry_is_one_clear_error(tmp_path, cli):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[[watch.disk]]\npath = "/"\nmax_used = "120%"\nbogus = 1\n')
    r = cli("--config", str(cfg), "watch", "all")
    assert r.code == 3 and "watch.disk" in r.err and "Traceback" not in r.err


class Boom:
    """A watchdog whose probe crashes: its targets become UNKNOWN, the others go on."""

    name = "boom"

    def targets(self) -> list[str]:
        return ["thing"]

    def squeue_query(self) -> None:
        return None

    def probe(self, env: ProbeEnv) -> None:
        raise RuntimeError("kaput")

    def check(self, probe_output: object, now: float) -> list[CheckResult]:
        return []


class Fine(Boom):
    name = "fine"

    def probe(self, env: ProbeEnv) -> None:
        return None

    def check(self, probe_output: object, now: float) -> list[CheckResult]:
        return [CheckResult("fine", "x", Status.WARNING, "x is meh")]


def test_a_crashing_probe_is_unknown_and_the_sweep_goes_on(tmp_path):
    results = sweep([Boom(), Fine()], ProbeEnv(None, StateDir(tmp_path / "s")), 5, time.time())
    assert [r.line for r in results] == [
        "BOOM UNKNOWN - thing: probe failed: kaput",
        "FINE WARNING - x is meh",
    ]
    assert exit_code(results) == 1  # worst wins: WARNING over UNKNOWN
