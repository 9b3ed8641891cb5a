"""Item 5 of issue 16: secrets are redacted in logs, errors, `config show`, status and alerts."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rtool.core.alert import Alert, Status
from rtool.core.redact import RedactFilter, redact
from rtool.core.state import StateDir
from rtool.notify.engine import process
from tests.hardening.conftest import no_traceback
from tests.notify.conftest import config as notify_config
from tests.servers.fixtures import down_port  # noqa: F401  (fixture)

TOKEN = "Zq8sV3cretT0kenValue42xyz"


@pytest.mark.parametrize(
    "text",
    [
        f"https://hooks.slack.com/services/T000/B000/{TOKEN}",
        f"POST https://example.org/api/webhooks/123/{TOKEN} failed",
        f"https://user:{TOKEN}@smtp.example.org:587",
        f"https://example.org/hook?token={TOKEN}&x=1",
        f"slack said invalid_auth for xoxb-1234-5678-{TOKEN}",
        f"xapp-1-A0-{TOKEN}",
        f"Authorization: Bearer {TOKEN}",
        f"headers={{'Authorization': 'Basic {TOKEN}'}}",
        f"https://hc-ping.com/{TOKEN}/fail",
        f"password={TOKEN}",
        f"https://ping.example.org/ping/{TOKEN}",
        f"https://example.org/x/{TOKEN}/y",
    ],
)
def test_redact_masks_every_kind_of_secret(text: str) -> None:
    out = redact(text)
    assert TOKEN not in out and "***" in out


@pytest.mark.parametrize(
    "text",
    [
        "DISK CRITICAL - /scratch 91% used (limit 80%)",
        "job 1234_5 running (job 1234, 3h, node01)",
        "token_env = SLACK_TOKEN",
        "url_file = ~/.config/rtool/hook",
        "see https://example.org/docs/page",
    ],
)
def test_redact_leaves_ordinary_text_alone(text: str) -> None:
    assert redact(text) == text


@given(st.text(max_size=200))
def test_redact_never_raises_and_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


def test_a_secret_registered_later_is_masked_in_text_already_redacted_once() -> None:
    from rtool.core.redact import register_secret

    text = "upload failed with key qz8-cached-secret-41 (retrying)"
    assert redact(text) == text  # nothing secret-looking yet; the result is cached
    register_secret("qz8-cached-secret-41")
    assert redact(text) == "upload failed with key *** (retrying)"


def test_logging_filter_redacts_message_args_and_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("rtool.test.redact")
    caplog.handler.addFilter(RedactFilter())
    try:
        raise ValueError(f"cannot post to https://hooks.slack.com/services/T/B/{TOKEN}")
    except ValueError:
        logger.exception("send failed: %s", f"xoxb-1-2-{TOKEN}")
    assert TOKEN not in caplog.text and "***" in caplog.text


def test_alerts_are_redacted_before_any_channel(tmp_path: Path) -> None:
    sink = tmp_path / "alerts.log"
    cfg = notify_config(log={"path": str(sink)})
    alert = Alert(
        "webhook:x",
        Status.CRITICAL,
        f"cannot reach https://hooks.slack.com/services/T0/B0/{TOKEN}",
        {"url": f"https://example.org/h?token={TOKEN}"},
    )
    process([alert], cfg, StateDir(tmp_path / "state"), now=time.time())
    text = sink.read_text()
    assert "key=webhook:x" in text and TOKEN not in text


def test_webhook_token_never_printed_by_watch_status_or_config_show(
    cli: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    down_port: int,  # noqa: F811
) -> None:
    monkeypatch.setenv("RTOOL_HOOK", f"http://127.0.0.1:{down_port}/hooks/T0/{TOKEN}?sig={TOKEN}")
    cfg = tmp_path / "rtool.toml"
    cfg.write_text(
        f'[state]\ndir = "{tmp_path / "state"}"\n'
        '[notify]\nfallback = "log"\n'
        '[notify.webhook]\nurl_env = "RTOOL_HOOK"\nretries = 0\ntimeout = "2s"\n'
        f'headers = {{ Authorization = "Bearer {TOKEN}" }}\n'
    )
    outputs = [
        cli("--config", str(cfg), "-vv", "watch", "disk", str(tmp_path), "--max-used", "0.001%"),
        cli("--config", str(cfg), "status"),
        cli("--config", str(cfg), "status", "--json"),
        cli("--config", str(cfg), "notify", "status"),
        cli("--config", str(cfg), "notify", "test", "--debug"),
        cli("--config", str(cfg), "config", "show"),
        cli("--config", str(cfg), "config", "show", "--json"),
    ]
    assert outputs[0].code == 2 and "webhook" in outputs[0].err  # the failed delivery is told
    assert "127.0.0.1" in outputs[0].err + outputs[4].err  # ... with its (redacted) URL
    for res in outputs:
        assert TOKEN not in res.out and TOKEN not in res.err, (res.out, res.err)
    assert "Authorization" in outputs[-2].out and "***" in outputs[-2].out
    assert json.loads(outputs[2].out)["outbox"]["queued"] >= 1  # the backlog is shown
    no_traceback(outputs[1].err)
