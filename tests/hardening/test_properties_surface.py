"""Issue 25, the bad-input families, over the whole CLI surface (every command and option is
enumerated, so a new one is covered): empty values, non-finite and overflowing numbers, config
files in other encodings or nested too deep, special files where a folder belongs, shell quoting
in a quota command, and state files of the wrong JSON type. Always a clear one-line error, the
documented exit code (`rtool watch`: 3 for its own errors; others 2), nothing lost.

Profile `rtool` (tests/hardening/conftest.py): few examples, no deadline.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.app.helppages import is_group, pages
from tests.hardening.conftest import no_traceback

CLI = settings(max_examples=max(3, settings().max_examples // 4))
#: What each command needs besides the option under test (so only that option can be wrong).
NEEDS = {
    "submit": ["train.py", "--dry-run"],
    "history": ["r1", "--stored"],
    "watch log": ["train.log", "--no-notify"],
    "watch disk": [".", "--no-notify"],
    "watch run": ["r1", "--no-notify", "--no-accounting"],
    "watch job": ["--no-notify"],
    "watch memory": ["--no-notify"],
    "watch cron": ["--no-notify"],
    "watch all": ["--no-notify"],
    "cron init": ["c1"],
    "cron run": ["x"],
    "silence add": ["disk:*"],
    "silence remove": ["x"],
    "nodes forget": ["n1"],
    "record": ["start"],
}


def _surface() -> list[tuple[str, Any]]:
    """(command, parameter) for every option and argument of every leaf command, the ones
    made from the registries included (walked the way click finds them: tests/app/helppages)."""
    out = []
    for path, cmd in pages():
        if is_group(cmd):
            continue
        for p in cmd.params:
            if p.name != "help" and not getattr(p, "is_flag", False):
                out.append((" ".join(path), p))
    return out


SURFACE = _surface()
OPTIONS = [(c, p) for c, p in SURFACE if p.param_type_name == "option"]
ARGUMENTS = [(c, p) for c, p in SURFACE if p.param_type_name == "argument"]


def _code_for(command: str) -> int:
    """Watchdogs and the drill report their own errors as UNKNOWN (3), other commands as 2."""
    return 3 if command.startswith(("watch", "drill")) else 2


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "train.log").write_text("step 1\n")
    return tmp_path


def test_the_surface_is_enumerated() -> None:
    commands = {c for c, _ in SURFACE}
    assert {"submit", "watch disk", "cron status", "cron tick", "silence add"} <= commands
    assert len(OPTIONS) > 80


@CLI
@given(blank=st.sampled_from(["", " ", "\t", "  \n"]))
def test_every_option_refuses_an_empty_value(cli: Any, here: Path, blank: str) -> None:
    for command, p in OPTIONS:
        res = cli(*command.split(), *NEEDS.get(command, []), p.opts[0], blank)
        no_traceback(res.err)
        assert res.code == _code_for(command), (command, p.opts[0], res.out, res.err)
        lines = res.err.strip().splitlines()
        assert len(lines) == 1 and p.opts[0] in lines[0] and "empty" in lines[0], res.err


@pytest.mark.parametrize(("command", "p"), ARGUMENTS, ids=[f"{c} {p.name}" for c, p in ARGUMENTS])
def test_every_argument_refuses_an_empty_value(cli: Any, here: Path, command: str, p: Any) -> None:
    needs = [a for a in NEEDS.get(command, []) if a.startswith("-")]
    res = cli(*command.split(), "", *needs)
    no_traceback(res.err)
    assert res.code == _code_for(command) and "empty value" in res.err, (command, res.err)


NUMBERS = ["inf", "-inf", "nan", "1e309", "9" * 400, "-1", "0x10", "１２", "1_0"]


def _numeric(p: Any) -> bool:
    """An int or float option (typer resolves click types late: ask its descriptor too)."""
    named = getattr(getattr(p, "type", None), "name", "")
    desc = getattr(getattr(p, "type_descriptor", None), "annotation", None)
    return named in ("float", "integer") or desc in (int, float)


NUMERIC = [(c, p) for c, p in OPTIONS if _numeric(p)]


@CLI
@given(value=st.sampled_from(NUMBERS))
def test_numbers_never_give_internal_errors(cli: Any, here: Path, value: str) -> None:
    assert NUMERIC, "no numeric option found"
    for command, p in NUMERIC:
        if command in ("cron tick", "record"):
            continue  # below: they would act on a valid value
        res = cli(*command.split(), *NEEDS.get(command, []), p.opts[0], value)
        no_traceback(res.err)
        assert res.code in ({0, 1, 2} | {_code_for(command)}), res.err


@given(value=st.sampled_from(NUMBERS[:-3]))
def test_slot_is_a_finite_time(cli: Any, here: Path, value: str) -> None:
    assert cli("cron", "init", "c").code == 0
    res = cli("cron", "tick", "--dir", "c", "--slot", value)
    no_traceback(res.err)
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1, res.err


@CLI
@given(text=st.text(alphabet="abcé€ \"'#=[]\n", min_size=1, max_size=40))
def test_a_config_that_is_not_utf8_is_refused(cli: Any, here: Path, text: str) -> None:
    for encoding in ("latin-1", "utf-16", "cp1252"):
        try:
            raw = f'[slurm]\ntimeout = "10s"  # {text!r}\n'.encode(encoding)
        except UnicodeEncodeError:
            continue
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            continue  # ASCII only: the same file in UTF-8
        (here / "enc.toml").write_bytes(raw)
        res = cli("--config", "enc.toml", "config", "check")
        assert res.code == 2 and "not UTF-8" in res.err, (encoding, res.err)
        watch = cli("--config", "enc.toml", "watch", "disk", ".", "--no-notify")
        assert watch.code == 3 and "not UTF-8" in watch.err


@CLI
@given(depth=st.integers(min_value=33, max_value=5000), inline=st.booleans())
def test_deeply_nested_toml_is_refused(cli: Any, here: Path, depth: int, inline: bool) -> None:
    value = "{a = " * depth + "1" + "}" * depth if inline else "[" * depth + "]" * depth
    (here / "deep.toml").write_text(f"x = {value}\n")
    res = cli("--config", "deep.toml", "config", "check")
    no_traceback(res.err)
    assert res.code == 2 and "nested" in res.err, res.err
    assert cli("--config", "deep.toml", "watch", "disk", ".", "--no-notify").code == 3


def _special(here: Path, kind: str) -> str:
    if kind == "file":
        (here / "f").write_text("x")
        return str(here / "f")
    if kind == "fifo":
        os.mkfifo(here / "p")
        return str(here / "p")
    if kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(here / "s"))
        s.close()
        return str(here / "s")
    return "/dev/null"


CRON_DIR = sorted({c for c, p in OPTIONS if c.startswith("cron") and p.opts[0] == "--dir"})


@pytest.mark.parametrize("kind", ["file", "fifo", "socket", "device"])
def test_a_cron_dir_that_is_not_a_folder(cli: Any, here: Path, kind: str) -> None:
    path = _special(here, kind)
    for command in CRON_DIR:
        if command in ("cron run",):
            res = cli("cron", "run", "x", "--dir", path)
        else:
            res = cli(*command.split(), "--dir", path)
        no_traceback(res.err)
        assert res.code == 2 and "not a folder" in res.err, (command, res.err)
    res = cli("cron", "init", path)
    assert res.code == 2 and "not a folder" in res.err


@CLI
@given(cmd=st.text(alphabet="lfs quota -u\"' \\x", min_size=1, max_size=30))
def test_quota_command_quoting(cli: Any, here: Path, cmd: str) -> None:
    try:
        splits = bool(shlex.split(cmd))
    except ValueError:  # an unclosed quote: gave a traceback, then DISK OK
        splits = False
    res = cli("watch", "disk", ".", "--quota-cmd", cmd, "--no-notify")
    no_traceback(res.err)
    if splits:
        assert res.code in (0, 1, 2, 3)
    else:
        assert res.code == 3 and "DISK OK" not in res.out, (res.out, res.err)
        assert len(res.err.strip().splitlines()) == 1 and "quota" in res.err, res.err
    (here / "q.toml").write_text(f'[[watch.disk]]\npath = "."\nquota_cmd = {json.dumps(cmd)}\n')
    check = cli("--config", "q.toml", "config", "check")
    no_traceback(check.err)
    assert check.code in (0, 2)


STATE_FILES = [
    "notify/alerts.json",
    "notify/channels.json",
    "notify/threads.json",
    "notify/silences.json",
    "notify/outbox/x.log.json",
    "nodes/suspects.json",
    "runs/r1.json",
    "watch/stuck-probes.json",
    "watch/actions-done.json",
    "watch/disk/x.json",
]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
SHAPED = st.fixed_dictionaries(
    {},
    optional={
        "keys": st.dictionaries(st.sampled_from(["disk:/x", "a"]), JSON, max_size=2) | JSON,
        "silences": st.lists(JSON, max_size=3) | JSON,
        "log": JSON,
        "nodes": st.dictionaries(st.sampled_from(["n1"]), st.lists(JSON, max_size=2)) | JSON,
        "attempts": st.lists(JSON, max_size=2) | JSON,
        "run": st.just("r1") | JSON,
        "channel": JSON,
        "notification": JSON,
    },
)


@CLI
@given(rel=st.sampled_from(STATE_FILES), value=JSON | SHAPED)
def test_state_files_of_the_wrong_json_type(cli: Any, here: Path, rel: str, value: Any) -> None:
    """A state file of the wrong shape never makes a run, or the next run's delivery, fail."""
    state = here / "state"
    shutil.rmtree(state, ignore_errors=True)  # one example at a time
    (here / "a.log").unlink(missing_ok=True)
    (state / rel).parent.mkdir(parents=True, exist_ok=True)
    (state / rel).write_text(json.dumps(value))
    (here / "c.toml").write_text(
        f'[state]\ndir = "{state}"\n[notify.log]\npath = "{here / "a.log"}"\n'
    )
    for _ in range(2):
        res = cli("--config", "c.toml", "watch", "disk", ".", "--max-used", "0.001%")
        no_traceback(res.err)
        assert res.code == 2 and "notify failed" not in res.err, res.err
    assert "CRITICAL] disk" in (here / "a.log").read_text()  # both runs' alert went out
    for args in (
        ("status",),
        ("notify", "status"),
        ("nodes", "--no-refresh"),
        ("history", "r1", "--stored"),
    ):
        out = cli("--config", "c.toml", *args)
        no_traceback(out.err)
        assert out.code in (0, 1), (args, out.err)
