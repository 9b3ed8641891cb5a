"""notify overhead, as ratios against baselines measured in the same run.

1. a steady-state poll (N keys, nothing changed, nothing sent) through `notify.process`
   vs. the least any stateful dedup must do: read the JSON state and write it back atomically;
2. delivering N queued notifications through the Slack webhook channel (slack_sdk, outbox
   bookkeeping) vs. N bare urllib POSTs to the same local Slack-like server;
3. the same for email through the email channel vs. N bare smtplib sends to the same aiosmtpd.

The poll case first drains the first run's alerts (a run sends at most `max_per_run`), and
fails if a timed poll sends anything.

    python bench/notify_bench.py [--keys 200] [--messages 50] [--repeat 15]
"""

from __future__ import annotations

import argparse
import json
import os
import smtplib
import statistics
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import median_seconds
from devtools.servers import SlackLikeServer, SmtpServer
from rtool.core.alert import Alert, Status
from rtool.core.state import StateDir, atomic_write
from rtool.notify.config import NotifyConfig
from rtool.notify.deliver import flush
from rtool.notify.engine import process
from rtool.notify.outbox import Outbox


def alerts(n: int) -> list[Alert]:
    return [
        Alert(f"job:run-{i}", Status.CRITICAL, f"run-{i} missing", {"id": str(i)}) for i in range(n)
    ]


def bench_poll(keys: int, repeat: int) -> tuple[float, float, float]:
    state = StateDir(tempfile.mkdtemp(prefix="nb-"))
    cfg = NotifyConfig.model_validate({"log": {"path": str(state.path / "log")}})
    batch = alerts(keys)
    process(batch, cfg, state)  # first run alerts; the measured ones change nothing
    while Outbox(state).counts():  # a run sends at most max_per_run: drain the first alerts
        flush(cfg, state)

    def poll() -> None:
        report = process(batch, cfg, state)
        assert not report.deliveries, "a steady-state poll must send nothing"

    path = state.path / "baseline.json"
    atomic_write(path, (state.path / "notify" / "alerts.json").read_text())

    def baseline() -> None:
        data = json.loads(path.read_text())
        atomic_write(path, json.dumps(data, indent=1, sort_keys=True))

    # in turn (poll, baseline, poll, ...): a shared machine's load swings hit both alike
    pairs = [(median_seconds(poll, 1), median_seconds(baseline, 1)) for _ in range(repeat)]
    ratio = statistics.median(m / b for m, b in pairs)
    return statistics.median(m for m, _ in pairs), statistics.median(b for _, b in pairs), ratio


def bench_slack(n: int) -> tuple[float, float, float]:
    with SlackLikeServer() as slack:
        os.environ["NB_HOOK"] = slack.webhook_url
        cfg = NotifyConfig.model_validate({"slack": {"webhook_url_env": "NB_HOOK"}})

        def measured() -> None:
            state = StateDir(tempfile.mkdtemp(prefix="nb-"))
            process(alerts(n), cfg, state, send=False)
            flush(cfg, state)

        def baseline() -> None:
            for i in range(n):
                body = json.dumps({"text": f"run-{i} missing"}).encode()
                req = urllib.request.Request(
                    slack.webhook_url, body, {"Content-Type": "application/json"}
                )
                urllib.request.urlopen(req, timeout=10).read()

        m, b = median_seconds(measured, 3), median_seconds(baseline, 3)
        return m, b, m / b


def bench_email(n: int) -> tuple[float, float, float]:
    with SmtpServer() as smtp:
        email = {"host": "127.0.0.1", "port": smtp.port, "starttls": False, "sender": "a@b.org"}
        cfg = NotifyConfig.model_validate({"email": {**email, "to": ["c@d.org"]}})

        def measured() -> None:
            state = StateDir(tempfile.mkdtemp(prefix="nb-"))
            process(alerts(n), cfg, state, send=False)
            flush(cfg, state)

        def baseline() -> None:
            for i in range(n):
                with smtplib.SMTP("127.0.0.1", smtp.port, timeout=10) as s:
                    s.sendmail("a@b.org", ["c@d.org"], f"Subject: run-{i}\n\nmissing\n")

        m, b = median_seconds(measured, 3), median_seconds(baseline, 3)
        return m, b, m / b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=200)
    ap.add_argument("--messages", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=15, help="polls timed (median); default 15")
    args = ap.parse_args()
    rows = [
        (f"poll, {args.keys} keys, nothing sent", *bench_poll(args.keys, args.repeat)),
        (f"slack webhook, {args.messages} msgs", *bench_slack(args.messages)),
        (f"email, {args.messages} msgs", *bench_email(args.messages)),
    ]
    print(f"{'case':34} {'notify':>9} {'baseline':>9} {'ratio':>6}")
    for name, m, b, r in rows:
        print(f"{name:34} {m * 1000:8.1f}ms {b * 1000:8.1f}ms {r:5.2f}x")
    print("(poll: medians of polls and baselines timed in turn, ratio the median of the pairs)")


if __name__ == "__main__":
    main()
