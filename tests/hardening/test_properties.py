"""Property-based proof for issue 16: every parser and every command/option family, driven with
generated bad values, answers with its own error (never another exception), and the CLI never
shows a traceback and exits with its documented code: `rtool watch` 0-3 (its own errors 3),
other commands 0 / 1 failure / 2 usage or config error.

Profile `rtool` (tests/hardening/conftest.py): few examples, no deadline.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rtool.core import units
from rtool.core.heartbeat import Heartbeat, HeartbeatFormatError
from rtool.core.slurm.parse import (
    ParseError,
    parse_sbatch_parsable,
    parse_scontrol_show_job,
    parse_slurm_duration,
    parse_squeue,
)
from rtool.cron.jobs import parse_cron_file
from rtool.slurm_templates import specs
from rtool.slurm_templates.jobs import validate_begin
from rtool.watchdogs.quota import QuotaParseError, parse_quota
from tests.hardening.conftest import no_traceback

# Values people type by mistake, and values an attacker would try.
NASTY = st.sampled_from(
    [
        "nan", "NaN", "inf", "-inf", "Infinity", "-1", "-0", "1e309", "9" * 400, "0x10", "1_000",
        "１２", "١٢", "12\u00a0s", "", " ", "%", "--", "-h", "--help", "\x00", "\n", "\u202e5m",
        "90s;rm -rf /", "$(id)", "`id`", "1-", "1-0", "0-4294967296", "1-10%0", "B:KILL@60",
        "USR1@99999999", "99999999:00:00", "10 GiB GiB", "5 TiBB", "80%%", "101%", "1e3%",
    ]
)  # fmt: skip
TEXT = st.one_of(
    NASTY, st.text(max_size=40), st.text(alphabet="0123456789-:,%.@BRsmhdwGiTK", max_size=20)
)
VALUES = st.one_of(
    TEXT,
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)


#: CLI-driving properties run in-process but still cost ~20-100 ms a call: fewer examples.
CLI = settings(max_examples=max(4, settings().max_examples // 3))


def _only(expected: type[BaseException] | tuple[type[BaseException], ...], fn: Any, *a: Any) -> Any:
    try:
        return fn(*a)
    except expected as exc:
        assert str(exc)  # a message naming the problem
        return None


# -- 12. parsers --------------------------------------------------------------------------------


@given(VALUES)
def test_units_accept_only_finite_bounded_ascii_values(value: Any) -> None:
    for parse, bound in (
        (units.parse_duration, units.MAX_DURATION),
        (units.parse_size, units.MAX_SIZE),
        (units.parse_percent, 100.0),
    ):
        out = _only(units.UnitError, parse, value)
        if out is not None:
            assert math.isfinite(out) and 0 <= out <= bound
            if isinstance(value, str):
                assert value.strip().isascii() or value.strip() == ""


@given(TEXT)
def test_slurm_specs_raise_only_spec_errors(value: str) -> None:
    for check in (
        specs.validate_array,
        specs.validate_signal,
        specs.validate_time,
        specs.validate_job_id,
        specs.validate_nodelist,
        specs.validate_job_name,
        validate_begin,
        lambda v: specs.validate_words(v, "partition"),
    ):
        _only(specs.SpecError, check, value)
    count = _only(specs.SpecError, specs.array_task_count, value)
    assert count is None or 1 <= count <= specs.MAX_ARRAY_TASKS


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_counts_and_positives(value: int) -> None:
    assert (_only(specs.SpecError, specs.validate_count, value, "n") is None) == (
        not 0 <= value <= 10**6
    )
    assert (_only(specs.SpecError, specs.validate_positive, value, "n") is None) == (
        not 1 <= value <= 10**9
    )


@given(st.one_of(TEXT, st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_output_parsers_raise_only_their_errors(text: str) -> None:
    for fmt in ("lfs", "mmlsquota", "simple"):
        _only(QuotaParseError, parse_quota, fmt, text)
    _only(ParseError, parse_squeue, text)
    _only(ParseError, parse_scontrol_show_job, text)
    _only(ParseError, parse_sbatch_parsable, text)
    _only(ParseError, parse_slurm_duration, text)
    parse_cron_file("f", text)  # problems are returned, never raised


@given(st.one_of(st.binary(max_size=300), st.text(max_size=300)))
def test_heartbeat_records_raise_only_format_errors(raw: bytes | str) -> None:
    _only(HeartbeatFormatError, Heartbeat.from_json, raw)


@given(
    st.dictionaries(
        st.sampled_from(["state", "time", "job_id", "step", "pid", "started", "error"]),
        VALUES,
        max_size=6,
    )
)
def test_heartbeat_fields_of_any_type(data: dict[str, Any]) -> None:
    _only(HeartbeatFormatError, Heartbeat.from_dict, data)


# -- every command and option family ------------------------------------------------------------


def _valid(parse: Any, value: str) -> bool:
    try:
        parse(value)
    except (units.UnitError, specs.SpecError, ValueError):
        return False
    return True


def _check(res: Any, codes: set[int]) -> None:
    no_traceback(res.err)
    assert res.code in codes, (res.code, res.out, res.err)


@CLI
@given(value=TEXT)
def test_watch_disk_options(cli: Any, tmp_path: Path, value: str) -> None:
    for flag, parse in (
        ("--max-used", units.parse_percent),
        ("--min-free", units.parse_size),
        ("--runway", units.parse_duration),
        ("--usable", units.parse_percent),
    ):
        res = cli("watch", "disk", str(tmp_path), flag, value, "--no-notify")
        _check(res, {0, 1, 2, 3})
        if not _valid(parse, value):
            assert res.code == 3 and len(res.err.strip().splitlines()) == 1, res.err


@CLI
@given(value=TEXT)
def test_watch_timeouts_and_stale(cli: Any, tmp_path: Path, value: str) -> None:
    log = tmp_path / "train.log"
    log.write_text("x\n")
    for args in (
        ("watch", "log", str(log), "--stale", value),
        ("watch", "log", str(log), "--timeout", value),
        ("watch", "memory", "--max-used", value),
    ):
        res = cli(*args, "--no-notify")
        _check(res, {0, 1, 2, 3})
        if value.strip().startswith("-") or "nan" in value.lower() or not value.strip():
            assert res.code == 3, (args, res.err)


@CLI
@given(value=st.one_of(TEXT, st.sampled_from(["--bogus", "-Z", "--json=2", "--no-notify=x"])))
def test_watch_own_errors_exit_3(cli: Any, tmp_path: Path, value: str) -> None:
    assume(value.strip() not in ("", "--help", "-h"))
    res = cli("watch", "disk", str(tmp_path), "--no-notify", "--max-used", "80%", value)
    _check(res, {0, 1, 2, 3})  # an extra path may be fine (checked: 0-2) or not (3)
    bad_flag = cli("watch", "disk", str(tmp_path), "--definitely-not-a-flag", value)
    _check(bad_flag, {3})


@CLI
@given(value=TEXT)
def test_watch_job_names(cli: Any, value: str) -> None:
    assume(value.strip() not in ("--help", "-h"))
    res = cli("watch", "job", "--name", value, "--timeout", "3s", "--no-notify")
    _check(res, {0, 1, 2, 3})


@CLI
@given(value=TEXT)
def test_submit_options(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('hi')\n")
    assume(value.strip() not in ("--help", "-h") and value != "")  # "" = not given
    for flag, parse in (
        ("--array", specs.validate_array),
        ("--signal", specs.validate_signal),
        ("--time", specs.validate_time),
        ("--job-name", specs.validate_run_job_name),
        ("--max-requeues", lambda v: specs.validate_count(int(v), "n")),
        ("--nodes", lambda v: specs.validate_positive(int(v), "n")),
        ("--partition", lambda v: specs.validate_words(v, "p")),
        ("--begin", validate_begin),
    ):
        res = cli("submit", "train.py", "--dry-run", flag, value)
        _check(res, {0, 1, 2})
        if not _valid(parse, value):
            assert res.code in (1, 2), (flag, value, res.out)


@CLI
@given(value=TEXT)
def test_status_stop_save_history_cron_options(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.chdir(tmp_path)
    assume(value.strip() not in ("--help", "-h"))
    start = time.monotonic()
    _check(cli("status", "--timeout", value), {0, 1, 2})
    _check(cli("stop", "--kill-switch", value), {0, 1, 2})
    _check(cli("save", "--save-switch", value), {0, 1, 2})
    _check(cli("cron", "status", "--dir", value), {0, 1, 2})
    _check(cli("notify", "status"), {0, 1, 2})
    assert time.monotonic() - start < 60


TOML_VALUES = st.one_of(
    st.sampled_from(['"nan"', "nan", "inf", "-1", '"-5m"', '"0s"', "0", '"１２s"', "1e400", "[]",
                     "{}", '"90s"', "true", '"80%"', '"101%"', '"10 TiB"', '"--state=RUNNING"']),
    st.integers().map(str),
    st.text(max_size=20).map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'),
)  # fmt: skip
KEYS = st.sampled_from(
    [
        ("slurm", "timeout"),
        ("watch", "timeout"),
        ("notify", "repeat_interval"),
        ("notify", "max_per_run"),
        ("notify", "run_deadline"),
        ("submit", "array"),
        ("submit", "signal"),
        ("submit", "time"),
        ("submit", "max_requeues"),
        ("submit", "partition"),
        ("submit", "extra_lines"),
        ("switches", "group_writable"),
        ("cron", "job_timeout"),
        ("state", "dir"),
    ]
)


@CLI
@given(key=KEYS, value=TOML_VALUES)
def test_config_values(cli: Any, tmp_path: Path, key: tuple[str, str], value: str) -> None:
    cfg = tmp_path / "gen.toml"
    cfg.write_text(f"[{key[0]}]\n{key[1]} = {value}\n")
    res = cli("--config", str(cfg), "config", "check")
    _check(res, {0, 2})
    watch = cli("--config", str(cfg), "watch", "disk", str(tmp_path), "--no-notify")
    _check(watch, {0, 1, 2, 3})
    if res.code == 2:
        assert watch.code == 3


@CLI
@given(st.binary(max_size=400))
def test_config_files_of_any_bytes(cli: Any, tmp_path: Path, raw: bytes) -> None:
    cfg = tmp_path / "gen.toml"
    cfg.write_bytes(raw)
    _check(cli("--config", str(cfg), "config", "check"), {0, 2})
    _check(cli("--config", str(cfg), "config", "show"), {0, 2})


# -- every kind of file rtool reads, corrupted --------------------------------------------------

STATE_FILES = [
    "notify/alerts.json",
    "notify/channels.json",
    "notify/threads.json",
    "notify/outbox/x.log.json",
    "watch/stuck-probes.json",
    "watch/actions-done.json",
    "submit/abc.json",
]


@given(
    rel=st.sampled_from(STATE_FILES), raw=st.one_of(st.binary(max_size=200), TEXT.map(str.encode))
)
def test_corrupt_state_files(cli: Any, tmp_path: Path, rel: str, raw: bytes) -> None:
    state = tmp_path / "state"
    target = state / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(raw)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[state]\ndir = "{state}"\n[notify.log]\npath = "{tmp_path / "a.log"}"\n')
    res = cli("--config", str(cfg), "watch", "disk", str(tmp_path), "--max-used", "0.001%")
    _check(res, {2})
    assert "notify failed" not in res.err
    _check(cli("--config", str(cfg), "status"), {0})
    _check(cli("--config", str(cfg), "notify", "status"), {0, 1})
    _check(cli("--config", str(cfg), "notify", "flush"), {0, 1})


@CLI
@given(raw=st.one_of(st.binary(max_size=300), TEXT.map(str.encode)))
def test_corrupt_heartbeats_and_cron_files(cli: Any, tmp_path: Path, raw: bytes) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(raw)
    hb = tmp_path / "hb.json"
    hb.write_bytes(raw)
    _check(cli("watch", "log", str(log), "--heartbeat", str(hb), "--no-notify"), {0, 1, 2, 3})
    root = tmp_path / "cron"
    _check(cli("cron", "init", str(root)), {0})
    (root / "cron.d" / "gen").write_bytes(raw)
    (root / "cron.hourly" / "gen.slurm").write_bytes(raw)
    _check(cli("cron", "status", "--dir", str(root)), {0, 1, 2})
    _check(cli("submit", str(root / "cron.hourly" / "gen.slurm"), "--dry-run"), {0, 1, 2})
