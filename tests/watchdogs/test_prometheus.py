"""Prometheus textfile metrics: written by `rtool watch --prom-textfile`, checked by Debian's
`promtool check metrics`, scraped by a real `prometheus-node-exporter` (textfile collector only,
on a loopback port), and the example Grafana dashboard queries only metrics rtool writes."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from devtools.servers import free_port
from rtool.core.alert import Status
from rtool.core.heartbeat import Heartbeat, RunState
from rtool.core.state import StateDir
from rtool.cron.store import CronStore
from rtool.runs.model import Attempt, Ledger
from rtool.runs.store import save as save_ledger
from rtool.watchdogs import prometheus
from rtool.watchdogs.base import CheckResult
from rtool.watchdogs.metrics import Metric

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana-rtool.json"


def _tool(name: str) -> str:
    path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    if path is None:
        pytest.fail(f"{name} is not installed (scripts/setup installs it)", pytrace=False)
    return path


@pytest.fixture
def node_exporter(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A real prometheus-node-exporter with only the textfile collector, on 127.0.0.1."""
    folder = tmp_path / "textfile"
    folder.mkdir(mode=0o755)
    port = free_port()
    argv = [
        _tool("prometheus-node-exporter"),
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={folder}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    log = (tmp_path / "node-exporter.log").open("w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError):
                urllib.request.urlopen(url, timeout=2).read()
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                text = (tmp_path / "node-exporter.log").read_text()
                pytest.fail(f"node_exporter did not start: {text[-2000:]}", pytrace=False)
            time.sleep(0.1)
        yield folder, url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def promtool_ok(path: Path) -> None:
    res = subprocess.run(
        [_tool("promtool"), "check", "metrics"],
        input=path.read_bytes(),
        capture_output=True,
        timeout=30,
    )
    assert res.returncode == 0, (path.name, res.stdout, res.stderr)


def test_watch_writes_metrics_node_exporter_scrapes(
    tmpfs, tmp_path, cli, monkeypatch, node_exporter
):
    folder, url = node_exporter
    fs = tmpfs("scratch", size="10M", inodes=200)
    (fs / "blob").write_bytes(b"x" * 3 * 1024 * 1024)
    log, beat = tmp_path / "train.out", tmp_path / "hb.json"
    log.write_text("step 1\n")
    now = time.time()
    hb = Heartbeat(RunState.RUNNING, now - 5, step=1234, step_seconds=0.5,
                   last_save_seconds=42.0, last_save_time=now - 600)  # fmt: skip
    beat.write_text(hb.to_json())
    # a webhook that refuses connections: the CRITICAL alert stays in the outbox (backlog 1)
    monkeypatch.setenv("HOOK_URL", f"http://127.0.0.1:{free_port()}/hook")
    cfg = tmp_path / "rtool.toml"
    hook = '[notify.webhook]\nurl_env = "HOOK_URL"\nretries = 0\n'
    cfg.write_text(f'[watch]\nprom_textfile = "{folder}"\n{hook}')
    seed_state(tmp_path / "cron", now)
    assert cli("silence", "add", "check=memory", "--for", "1h").code == 0

    r = cli("--config", str(cfg), "watch", "disk", str(fs), "--max-used", "20%")
    assert r.code == 2, r.out + r.err
    r = cli("--config", str(cfg), "watch", "log", str(log), "--heartbeat", str(beat), "--no-notify")
    assert r.code == 0, r.out + r.err

    files = sorted(p.name for p in folder.iterdir())
    assert files == sorted(
        [*(f for f in files if f.startswith("rtool-watch-")), "rtool-state.prom"]
    )
    assert len(files) == 3  # one file per set of checks, one state file; no temp file left
    for name in files:
        promtool_ok(folder / name)

    got = scrape(url)
    assert got[("node_textfile_scrape_error", ())] == 0
    disk = (("check", "disk"), ("what", str(fs)))
    logl = (("check", "log"), ("what", str(log)))
    assert got[("rtool_check_status", disk)] == 2
    assert got[("rtool_check_status", logl)] == 0
    assert got[("rtool_disk_used_ratio", disk)] == pytest.approx(0.3, abs=0.02)
    assert got[("rtool_disk_used_bytes", disk)] >= 3 * 1024 * 1024
    assert got[("rtool_disk_inodes_free", disk)] > 150
    assert got[("rtool_training_step", logl)] == 1234
    assert got[("rtool_training_steps_per_second", logl)] == 2.0
    assert got[("rtool_checkpoint_save_seconds", logl)] == 42.0
    assert 599 <= got[("rtool_checkpoint_last_save_age_seconds", logl)] < 700
    assert 4 <= got[("rtool_heartbeat_age_seconds", logl)] < 60
    check_state_metrics(got, tmp_path / "cron", now)


def seed_state(cron_dir: Path, now: float) -> None:
    """A cron chain's tick and failed job, and a run ledger, in the state dir."""
    state = StateDir()
    store = CronStore(state, cron_dir)
    store.write_heartbeat({"time": now - 60})
    data = store.load()
    data["jobs"]["cron.hourly/clean.sh"] = {"start": now - 70, "status": "failed"}
    store.save(data)
    # a run ledger (rtool/runs/store.py): two attempts of 1000 s, steps 0-1500 of 1 s kept
    attempts = [
        Attempt("llama", 1, "88_1", started=now - 3000, ended=now - 2000, state="TIMEOUT",
                step_start=0, step_end=800),
        Attempt("llama", 2, "88_2", started=now - 1500, ended=now - 500, state="COMPLETED",
                step_start=500, step_end=1500),
    ]  # fmt: skip
    save_ledger(state, Ledger("llama", attempts, best_step=1500, step_seconds=1.0))


def check_state_metrics(got: dict, cron_dir: Path, now: float) -> None:  # type: ignore[type-arg]
    assert got[("rtool_outbox_backlog", ())] == 1
    assert got[("rtool_outbox_items", (("channel", "webhook"),))] == 1
    folder = (("dir", str(cron_dir)),)
    assert got[("rtool_cron_last_success_timestamp_seconds", folder)] == pytest.approx(now - 60)
    job = (("dir", str(cron_dir)), ("job", "cron.hourly/clean.sh"))
    assert got[("rtool_cron_job_last_run_success", job)] == 0
    assert got[("rtool_silences_active", ())] == 1
    assert got[("rtool_run_attempts", (("run", "llama"),))] == 2
    assert got[("rtool_run_goodput_ratio", (("run", "llama"),))] == pytest.approx(1501 / 2000)


def test_textfile_folder_must_be_safe(tmp_path, cli):
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    link = tmp_path / "link"
    link.symlink_to(loose)
    for folder, why in (
        (loose, "writable by group or others"),
        (link, "symlink"),
        (tmp_path / "no", "No such"),
    ):
        r = cli("watch", "disk", str(tmp_path), "--prom-textfile", str(folder), "--no-notify")
        # rtool watch's own errors are 3 UNKNOWN
        assert r.code == 3 and why in r.err and "Traceback" not in r.err, (r.code, r.err)
        assert r.err.count("\n") == 1


def written_metric_names() -> set[str]:
    """Every family name rtool writes (from the exporter's own registries)."""
    results = [CheckResult("disk", "/x", Status.OK, "fine")]
    regs = [prometheus.checks_registry(results, 0.0)]
    names = {f.name for reg in regs for f in reg.collect()}
    state_dir = StateDir()
    names |= {f.name for f in prometheus.state_registry(state_dir, 0.0).collect()}
    assert {m.info.prom for m in Metric} <= names
    return names


def test_grafana_dashboard_queries_only_written_metrics():
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    used = {name for e in exprs for name in re.findall(r"\brtool_[a-z_]+\b", e)}
    written = written_metric_names()
    assert used and used <= written, used - written
    assert {m.info.prom for m in Metric} <= used  # and it shows every measure
