"""Items 12 and 13 of issue 16, by example: strict values naming the offending value, positive
timeouts, an explicit 0 honoured, and the exit codes of each command family's own errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rtool.core import units
from rtool.slurm_templates import specs
from tests.hardening.conftest import no_traceback


@pytest.mark.parametrize(
    ("parse", "value"),
    [
        (units.parse_duration, "nan"),
        (units.parse_duration, float("inf")),
        (units.parse_duration, -5),
        (units.parse_duration, "１２m"),
        (units.parse_duration, "999999999d"),
        (units.parse_size, "1e3GiB"),
        (units.parse_size, "99999999999PiB"),
        (units.parse_size, float("nan")),
        (units.parse_percent, "٨٠%"),
        (units.parse_percent, "-1%"),
        (specs.validate_array, "1-9999999"),
        (specs.validate_array, "0-4000000:1"),
        (specs.validate_array, "１-3"),
        (specs.validate_array, "1-10%0"),
        (specs.validate_signal, "B:USR1@99999999"),
        (specs.validate_signal, "B:KILL@60"),
        (specs.validate_signal, "USR١"),
        (specs.validate_time, "99999999:00:00"),
        (specs.validate_time, "nan"),
        (specs.validate_time, "１０:00"),
    ],
)
def test_bad_values_are_refused_naming_the_value(parse: Any, value: Any) -> None:
    with pytest.raises((units.UnitError, specs.SpecError)) as info:
        parse(value)
    assert str(value)[:4] in str(info.value)  # the message names the value


@pytest.mark.parametrize("value", ['"0s"', "0", '"-5s"', '"nan"'])
def test_slurm_timeout_must_be_positive(cli: Any, tmp_path: Path, value: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[slurm]\ntimeout = {value}\n")
    res = cli("--config", str(cfg), "config", "check")
    assert res.code == 2 and "slurm.timeout" in res.err
    watch = cli("--config", str(cfg), "watch", "disk", str(tmp_path))
    assert watch.code == 3 and "slurm.timeout" in watch.err  # rtool watch's own error: UNKNOWN
    no_traceback(watch.err)


def test_explicit_zero_max_requeues_is_honoured(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('hi')\n")
    cfg = tmp_path / "c.toml"
    cfg.write_text("[submit]\nmax_requeues = 5\n")
    res = cli("--config", str(cfg), "submit", "train.py", "--auto-requeue", "--max-requeues", "0",
              "--dry-run")  # fmt: skip
    assert res.code == 0, res.err
    assert "RTOOL_MAX_REQUEUES=0" in res.out
    default = cli("--config", str(cfg), "submit", "train.py", "--auto-requeue", "--dry-run")
    assert "RTOOL_MAX_REQUEUES=5" in default.out
    cfg.write_text("[submit]\nmax_requeues = 0\n")
    assert cli("--config", str(cfg), "config", "check").code == 0
    bad = cli("submit", "train.py", "--auto-requeue", "--max-requeues", "-1", "--dry-run")
    assert bad.code == 2 and "max-requeues" in bad.err


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["watch", "disk", "/", "--max-used", "nan"], 3),
        (["watch", "disk", "/", "--bogus"], 3),
        (["watch", "log", "x.log", "--stale", "-5m"], 3),
        (["watch", "job"], 3),
        (["watch", "disk", "/", "--timeout", "0s"], 3),
        (["status", "--timeout", "inf"], 2),
        (["submit", "train.py", "--array", "1-x", "--dry-run"], 2),
        (["submit", "train.py", "--job-name", "--state=RUNNING", "--dry-run"], 2),
        (["stop", "--cancel-pending"], 2),
        (["config", "nope"], 2),
        (["cron", "run"], 2),
        (["notify", "test", "--channel", "pigeon"], 2),
    ],
)
def test_exit_codes_of_own_errors(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], code: int
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('hi')\n")
    res = cli(*args)
    no_traceback(res.err)
    assert res.code == code, (res.code, res.err)
    assert res.err.startswith("rtool: ") or "Usage" in res.err or "Error" in res.err
