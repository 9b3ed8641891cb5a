"""`rtool config show` prints valid TOML that `rtool config check` accepts back (issue 30, point
10): values as written (`90s` stays `90s`), defaults exact, never `null` or inline JSON; secrets
masked, and a masked value given back is refused, never taken for the secret."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rtool.app.plumbing.appconfig import Config, load_config
from rtool.core.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROUND_TRIP = settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

NUMBER = st.integers(1, 90)
DURATION = st.one_of(
    st.builds(lambda n, u: f"{n}{u}", NUMBER, st.sampled_from(["s", "m", "h", "d", "ms", "min"])),
    st.sampled_from(["90s", "1h30m", "0.5s", "2d4h", "1w", "45 m", "600"]),
    st.integers(1, 100_000),
    st.floats(0.25, 5000, allow_nan=False).map(lambda x: round(x, 3)),
)
SIZE = st.one_of(
    st.builds(lambda n, u: f"{n}{u}", NUMBER, st.sampled_from(["GiB", "TiB", "MB", "TB", "K"])),
    st.sampled_from(["1.5TB", "500GiB", "100M", "12345"]),
)
PERCENT = st.one_of(
    st.builds(lambda n: f"{n}%", st.integers(0, 100)), st.sampled_from(["12.5%", "80", "99.9%"])
)
WORD = st.text("abcdefghij-_", min_size=1, max_size=8)
PATH = WORD.map(lambda w: f"/scratch/{w}")
STATUSES = st.lists(
    st.sampled_from(["OK", "WARNING", "CRITICAL", "UNKNOWN"]), min_size=1, max_size=4, unique=True
)


def _some(**fields: Any) -> st.SearchStrategy[dict[str, Any]]:
    """A table with any subset of `fields` (each a strategy)."""
    return st.fixed_dictionaries({}, optional=fields)


CONFIGS = st.fixed_dictionaries(
    {},
    optional={
        "slurm": _some(timeout=DURATION),
        "notify": st.fixed_dictionaries(
            {"log": _some(path=PATH, statuses=STATUSES, timeout=DURATION)},
            optional={
                "repeat_interval": DURATION,
                "min_failures": st.integers(1, 5),
                "max_age": DURATION,
                "escalate": st.lists(
                    st.fixed_dictionaries({"after": DURATION, "to": st.just("log")}), max_size=2
                ),
                "slack": st.fixed_dictionaries(
                    {"webhook_url_env": st.just("RT_SLACK_URL")},
                    optional={"retry_interval": DURATION, "statuses": STATUSES},
                ),
                "email": st.fixed_dictionaries(
                    {
                        "host": st.just("smtp.example.org"),
                        "sender": st.just("rtool@example.org"),
                        "to": st.lists(WORD.map(lambda w: f"{w}@x.org"), min_size=1, max_size=3),
                    },
                    optional={"port": st.integers(1, 65535), "password_env": st.just("RT_PW")},
                ),
            },
        ),
        "watch": _some(
            timeout=DURATION,
            disk=st.lists(
                st.fixed_dictionaries(
                    {"path": PATH},
                    optional={
                        "max_used": PERCENT,
                        "warn_used": PERCENT,
                        "min_free": SIZE,
                        "runway": DURATION,
                        "quota_cmd": st.lists(WORD, min_size=1, max_size=3),
                    },
                ),
                max_size=3,
            ),
            log=st.lists(
                st.fixed_dictionaries(
                    {"path": PATH}, optional={"stale": DURATION, "on_hang": st.just("requeue")}
                ),
                max_size=2,
            ),
            job=st.lists(
                st.fixed_dictionaries({"name": WORD}, optional={"max_pending": DURATION}),
                max_size=2,
            ),
        ),
        "cron": _some(
            grace=DURATION,
            keep_logs=DURATION,
            daily_at=st.sampled_from(["03:00", "3:30", "23:59"]),
            weekly_on=st.sampled_from(["mon", "Tuesday", "sun"]),
            periods=_some(hourly=DURATION, daily=DURATION),
        ),
        "runs": _some(log_tail=SIZE),
        "nodes": _some(expiry=DURATION, max_excluded=PERCENT),
    },
)


def _given_scalars(data: Any, at: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    if isinstance(data, dict):
        return [x for k, v in data.items() for x in _given_scalars(v, (*at, k))]
    if isinstance(data, list) and data and all(isinstance(v, dict) for v in data):
        return [x for n, v in enumerate(data) for x in _given_scalars(v, (*at, n))]
    return [(at, data)]


def _dig(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


@ROUND_TRIP
@given(raw=CONFIGS)
def test_show_reads_back_as_the_same_config_with_values_as_written(cli, monkeypatch, raw) -> None:
    monkeypatch.setenv("RT_SLACK_URL", "https://hooks.example.org/services/T0/B0/x")
    monkeypatch.setenv("RT_PW", "smtp-password")
    with tempfile.TemporaryDirectory() as tmp:
        original = Path(tmp) / "rtool.toml"
        original.write_text(tomlkit.dumps(raw))
        try:
            expected = load_config(original)
        except ConfigError:  # a combination the schema refuses (e.g. warn_used > max_used)
            assume(False)
        res = cli("--config", str(original), "config", "show")
        assert res.code == 0, res.err
        assert "null" not in res.out and "{" not in res.out, res.out
        shown = tomllib.loads(res.out)  # valid TOML
        for path, value in _given_scalars(raw):  # every value as the file wrote it
            assert _dig(shown, path) == value, (path, value)
        again = Path(tmp) / "shown.toml"
        again.write_text(res.out)
        check = cli("--config", str(again), "config", "check")
        assert check.code == 0, check.err
        assert load_config(again).model_dump() == expected.model_dump()


def test_defaults_read_back_exactly(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    res = cli("config", "show")
    assert res.code == 0 and "effective config from built-in defaults" in res.out
    (tmp_path / "shown.toml").write_text(res.out)
    assert load_config(tmp_path / "shown.toml").model_dump() == Config().model_dump()
    data = tomllib.loads(res.out)
    assert data["notify"]["repeat_interval"] == "4h" and data["runs"]["log_tail"] == "1MiB"


SECRETS = """\
[cron]
ping_url = "https://hc-ping.com/0b5e7c1a-4d2f-4b8e-9a61-5f0c2d7e8a93"
[notify.webhook]
url_env = "RT_HOOK"
headers = { Authorization = "Bearer s3cr3t-T0KEN-value", Content-Type = "application/json" }
"""


def test_secrets_are_masked_and_a_masked_value_is_refused_back(cli, tmp_path: Path) -> None:
    cfg = tmp_path / "rtool.toml"
    cfg.write_text(SECRETS)
    res = cli("--config", str(cfg), "config", "show")
    assert res.code == 0, res.err
    assert "0b5e7c1a" not in res.out and "s3cr3t" not in res.out
    shown = tomllib.loads(res.out)
    assert shown["cron"]["ping_url"] == "***"
    assert shown["notify"]["webhook"]["headers"] == {
        "Authorization": "***",
        "Content-Type": "application/json",
    }
    doc = json.loads(cli("--config", str(cfg), "config", "show", "--json").out)
    assert doc["config"]["cron"]["ping_url"] == "***"
    back = tmp_path / "shown.toml"
    back.write_text(res.out)
    check = cli("--config", str(back), "config", "check")
    assert check.code == 2
    assert "cron.ping_url (line" in check.err and "masked value" in check.err
    assert "notify.webhook.headers.Authorization (line" in check.err
