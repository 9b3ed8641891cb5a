"""The cron chain on the real local Slurm, with "hourly" compressed to a few seconds."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rtool.app.plumbing.appconfig import load_config
from rtool.core.slurm import Slurm
from rtool.core.state import StateDir
from rtool.cron import chain, manage
from rtool.cron.tick import TickEnv
from tests.cron.conftest import CronSetup
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

PERIOD = 4.0
TICKS = 10
#: How far after its slot a tick may start on a busy 2-core machine (Slurm's begin-time
#: scheduling with bf_interval=1,sched_interval=2 plus Python start-up: about 1-2 s). It must
#: stay below the period and must not grow from tick to tick.
MAX_LATENESS = PERIOD - 0.1


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def active(slurm: Slurm, setup: CronSetup) -> list[str]:
    return [f"{j.job_id}:{j.state}" for j in chain.chain_jobs(slurm, setup.name)]


def _drop_jobs(c: CronSetup, tmp_path: Path) -> tuple[Path, Path, Path]:
    """A job that works, one that fails, a .slurm job, a non-job, an 8-day-old log."""
    hourly = c.root / "cron.hourly"
    runs = tmp_path / "runs.txt"
    executable(hourly / "hello.sh", f"#!/bin/sh\ndate +%s >> {runs}\n")
    executable(hourly / "fail.sh", "#!/bin/sh\necho broken >&2\nexit 3\n")
    marker = tmp_path / "child.txt"
    (hourly / "child.slurm").write_text(
        f"#!/bin/bash\n#SBATCH --time=1\necho $SLURM_JOB_ID > {marker}\n"
    )
    (hourly / "notes").write_text("not a job")
    old_log = c.root / "logs" / "ancient.log"
    old_log.write_text("x")
    eight_days_ago = time.time() - 8 * 86400
    os.utime(old_log, (eight_days_ago, eight_days_ago))
    return runs, marker, old_log


def _assert_on_slots(ticks: list[dict[str, Any]]) -> None:
    """Anchored to slots: every slot is on the period's grid, none is skipped, lateness
    bounded, and no accumulating drift (the last ticks are not later than the first ones)."""
    slots = [t["slot"] for t in ticks]
    assert all(s % PERIOD == 0 for s in slots), slots
    gaps = [slots[i + 1] - slots[i] for i in range(TICKS - 1)]
    assert all(g % PERIOD == 0 for g in gaps) and sum(g > PERIOD for g in gaps) <= 1, gaps
    late = [t["lateness"] for t in ticks]
    assert max(late) < MAX_LATENESS, late
    assert sum(late[-3:]) / 3 < sum(late[:3]) / 3 + 1.0, late


def test_chain_ticks_on_slots_runs_jobs_alerts_once_and_cleans_logs(
    make_cron: Callable[..., CronSetup], cli: Callable[..., Any], slurm: Slurm, tmp_path: Path
) -> None:
    c = make_cron(hourly=f"{PERIOD:g}s")
    runs, marker, old_log = _drop_jobs(c, tmp_path)

    res = cli(*c.args("cron", "start"))
    assert res.code == 0, res.err
    assert "cron chain started" in res.out

    store = c.store()
    wait_for(lambda: len(store.read_ticks()) >= TICKS, timeout=TICKS * PERIOD + 25, what="10 ticks")
    ticks = store.read_ticks()[:TICKS]

    _assert_on_slots(ticks)

    # the dropped jobs ran on (almost) every tick
    assert len(runs.read_text().split()) >= TICKS - 1
    # the .slurm file became a Slurm job, and its outcome was recorded by a later tick
    wait_for(marker.exists, timeout=15, what="the .slurm job's output")
    rec = wait_for(
        lambda: store.load()["jobs"]["cron.hourly/child.slurm"].get("last_outcome"),
        timeout=15,
        what="the .slurm job's outcome",
    )
    assert rec == {  # from sacct: the session's cluster has accounting
        "job_id": rec["job_id"],
        "status": "ok",
        "exit_code": 0,
        "state": "COMPLETED",
        "source": "sacct",
    }
    # the failing job alerted once, not once per tick
    alert_lines = [
        ln for ln in c.alerts.read_text().splitlines() if "key=cron:cron.hourly/fail.sh" in ln
    ]
    assert len(alert_lines) == 1, alert_lines
    assert "CRITICAL" in alert_lines[0] and "exit_code=3" in alert_lines[0]
    assert "key=cron:cron.hourly/hello.sh" not in c.alerts.read_text()
    # the bad file is skipped with a warning in the scheduler's log; old logs are removed
    sched_logs = "".join(p.read_text() for p in (c.root / "logs").glob("scheduler.*.log"))
    assert "cron.hourly/notes: skipped" in sched_logs
    assert not old_log.exists()
    assert any((c.root / "logs").glob("hourly-fail.sh.*.log"))

    status = cli(*c.args("cron", "status"))
    assert status.code == 0
    assert "PENDING" in status.out or "RUNNING" in status.out
    assert any(
        ln.startswith("cron.hourly/fail.sh") and " 3 " in ln for ln in status.out.splitlines()
    )

    # the watchman: OK while the chain lives, CRITICAL once it is cancelled
    assert cli(*c.args("watch", "cron", "--no-notify")).code == 0
    slurm.scancel(name=c.name)
    wait_for(lambda: not active(slurm, c), timeout=15, what="the chain to be gone")
    watch = cli(*c.args("watch", "cron", "--no-notify"))
    assert watch.code == 2, watch.out
    assert "CRON CRITICAL" in watch.out and "no scheduler job" in watch.out


def test_second_start_leaves_one_chain_and_stop_cancels_it(
    make_cron: Callable[..., CronSetup], cli: Callable[..., Any], slurm: Slurm
) -> None:
    c = make_cron(hourly="1h")
    config = load_config(c.config)
    env = TickEnv(config, StateDir(c.state), Slurm(timeout=30), c.root, c.config)
    messages: list[str] = []
    threads = [
        threading.Thread(target=lambda: messages.append(manage.start(env))) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sum("started" in m for m in messages) == 1, messages
    again = cli(*c.args("cron", "start"))
    assert again.code == 0 and "already runs" in again.out
    assert len(active(slurm, c)) == 1

    stopped = cli(*c.args("cron", "stop"))
    assert stopped.code == 0 and "cancelled" in stopped.out
    wait_for(lambda: not active(slurm, c), timeout=15, what="the chain to be cancelled")


def test_cron_run_and_clear_errors(
    make_cron: Callable[..., CronSetup], cli: Callable[..., Any], tmp_path: Path
) -> None:
    c = make_cron(hourly="1h", partition="no-such-partition")
    executable(c.root / "cron.daily" / "fail.sh", "#!/bin/sh\necho oops\nexit 4\n")
    (c.root / "cron.d" / "lines").write_text(f"*/5 * * * * echo line-ran > {tmp_path}/line.txt\n")

    res = cli(*c.args("cron", "run", "fail.sh"))
    assert res.code == 1 and "exit code 4" in res.out
    log_file = res.out.split("log: ")[1].strip()
    assert "oops" in Path(log_file).read_text()
    assert "key=cron:cron.daily/fail.sh" in c.alerts.read_text()

    assert cli(*c.args("cron", "run", "cron.d/lines:1")).code == 0
    assert (tmp_path / "line.txt").read_text().strip() == "line-ran"

    missing = cli(*c.args("cron", "run", "nope"))
    assert missing.code == 2 and "no cron job named 'nope'" in missing.err

    # a rejected submission is one clear line, no traceback, and no chain
    bad = cli(*c.args("cron", "start"))
    assert bad.code == 1
    assert bad.err.startswith("rtool: ") and len(bad.err.strip().splitlines()) == 1
    assert "Traceback" not in bad.err

    not_a_dir = cli("cron", "start", "--dir", str(tmp_path / "nowhere"))
    assert not_a_dir.code == 2 and "rtool cron init" in not_a_dir.err


def test_tick_pings_the_health_url_and_fail_suffix(
    make_cron: Callable[..., CronSetup], cli: Callable[..., Any], slurm: Slurm
) -> None:
    import http.server

    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/ping/abc"
        c = make_cron(hourly="1h", ping_url=url)
        assert cli(*c.args("cron", "tick")).code == 0
        assert hits == ["/ping/abc"]
        assert len(active(slurm, c)) == 1  # the tick queued the next one
        # a failing cron.d line that is due (the line was last checked long ago: a missed run)
        (c.root / "cron.d" / "f").write_text("* * * * * exit 5\n")
        assert cli(*c.args("cron", "tick")).code == 0
        assert len(active(slurm, c)) == 1  # still one chain: the pending tick was reused
        store = c.store()
        data = store.load()
        data["lines"] = {k: 0.0 for k in data["lines"]}
        store.save(data)
        cli(*c.args("cron", "tick"))
        assert hits[-1] == "/ping/abc/fail"
        assert store.load()["jobs"]["cron.d/f:1"]["exit_code"] == 5
    finally:
        server.shutdown()


def test_watch_cron_knows_a_stopped_chain_from_a_dead_one_and_cron_list_shows_both(
    make_cron: Callable[..., CronSetup], cli: Callable[..., Any], slurm: Slurm
) -> None:
    import json

    kept, lost = make_cron(hourly="1h"), make_cron(hourly="1h")
    for c in (kept, lost):
        assert cli(*c.args("cron", "start")).code == 0
    # each setup has its own state dir: the other chain's jobs are listed without a folder
    doc = json.loads(cli(*kept.args("cron", "list", "--json")).out)
    chain_doc, other = doc["chains"]
    assert other["dir"] is None and other["name"] == lost.name and other["state"] == "queued"
    assert chain_doc["dir"] == str(kept.root) and chain_doc["backend"] == "jobs"
    assert chain_doc["state"] == "queued" and chain_doc["next_tick"] > time.time()
    assert {s["name"]: s["every"] for s in chain_doc["slots"]} == {
        "tick": 3600.0,
        "hourly": 3600.0,
        "daily": 86400.0,
        "weekly": 7 * 86400.0,
    }
    watch = cli(*kept.args("watch", "cron", "--no-notify"))
    assert watch.code == 0, watch.out

    assert cli(*kept.args("cron", "stop")).code == 0
    wait_for(lambda: not active(slurm, kept), timeout=15, what="the chain to be cancelled")
    watch = cli(*kept.args("watch", "cron", "--no-notify"))
    assert watch.code == 0 and "CRON OK" in watch.out, watch.out
    assert "stopped at" in watch.out and "by you (rtool cron stop)" in watch.out
    listed = cli(*kept.args("cron", "list"))
    assert listed.code == 0 and listed.out.splitlines()[1].startswith("stopped  jobs")
    assert str(kept.root) in listed.out and "stopped " in listed.out
    status = cli(*kept.args("cron", "status"))
    assert "stopped on purpose" in status.out, status.out
    overall = cli(*kept.args("status", "--json"))
    assert json.loads(overall.out)["cron"]["chain_status"] == "OK", overall.out

    slurm.scancel(name=lost.name)  # the chain dies behind rtool's back
    wait_for(lambda: not active(slurm, lost), timeout=15, what="the chain to die")
    watch = cli(*lost.args("watch", "cron", "--no-notify"))
    assert watch.code == 2 and "no scheduler job queued or running" in watch.out, watch.out
    doc = json.loads(cli(*lost.args("cron", "list", "--json")).out)
    assert [c["state"] for c in doc["chains"]] == ["dead"]

    assert cli(*kept.args("cron", "start")).code == 0  # started again: the mark is gone
    watch = cli(*kept.args("watch", "cron", "--no-notify"))
    assert watch.code == 0 and "stopped" not in watch.out, watch.out
