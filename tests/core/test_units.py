from __future__ import annotations

import time

import pytest

from rtool.core.units import (
    UnitError,
    format_duration,
    format_size,
    format_when,
    parse_duration,
    parse_percent,
    parse_size,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("30m", 1800),
        ("4h", 14400),
        ("7d", 604800),
        ("1h30m", 5400),
        ("250ms", 0.25),
        ("45", 45),
        (12, 12),
        ("2w", 1209600),
        ("1.5h", 5400),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "4 hours please", "h", "-5s", "5x", "1h foo", True])
def test_bad_durations_name_the_value(bad: object) -> None:
    with pytest.raises(UnitError, match="duration"):
        parse_duration(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("500GiB", 500 * 2**30),
        ("5TiB", 5 * 2**40),
        ("1.5TB", 1_500_000_000_000),
        ("100M", 100_000_000),
        ("4096", 4096),
        ("10 MiB", 10 * 2**20),
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("bad", ["5 parsecs", "GiB", "-1GB", "1.2.3GB"])
def test_bad_sizes(bad: str) -> None:
    with pytest.raises(UnitError, match="size"):
        parse_size(bad)


def test_percentages() -> None:
    assert parse_percent("80%") == 80.0
    assert parse_percent("99.5 %") == 99.5
    assert parse_percent(80) == 80.0
    for bad in ("180%", "eighty", "-3%"):
        with pytest.raises(UnitError, match="percentage"):
            parse_percent(bad)


def test_formatting_round_trips() -> None:
    assert format_duration(5400) == "1h30m"
    assert parse_duration(format_duration(5400)) == 5400
    assert format_duration(90061) == "1d1h"
    assert format_size(3 * 2**30) == "3.0GiB"


def test_format_when_past_future_and_missing() -> None:
    t = 1_700_000_000.0
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
    assert format_when(t, t + 720) == f"{stamp} (12m ago)"
    assert format_when(t, t - 2880) == f"{stamp} (in 48m)"
    assert format_when(None, t) == "never"
    assert format_when(0, t, missing="-") == "-"


def test_alert_key_is_written_and_read_in_one_place() -> None:
    from rtool.core.alert import Alert, AlertKey, Status

    key = AlertKey("cron", "scheduler:/home/u/cron")
    assert str(key) == "cron:scheduler:/home/u/cron" and AlertKey.parse(str(key)) == key
    assert AlertKey.parse("bare") == AlertKey("", "bare")
    assert Alert(str(AlertKey("disk", "/x")), Status.OK, "ok").parts == AlertKey("disk", "/x")
