"""Configuration in layers (issue 30, point 6): the user's file, then the project's, later keys
winning, arrays of tables extended; `--config`/`$RTOOL_CONFIG` name exactly the files read;
`rtool config show --origin` and errors say which file and line a value came from; the batch
script's pre-flight reads exactly the layers `rtool submit` read."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtool.core.config import config_files
from rtool.core.config.layers import Layer, Layered
from tests.conftest import CliResult

USER = """\
[notify]
min_failures = 2
repeat_interval = "4h"
[notify.slack]
webhook_url_env = "TEAM_SLACK_URL"
[notify.email]
host = "smtp.example.org"
sender = "rtool@example.org"
to = ["me@example.org", "ops@example.org"]
[[watch.disk]]
path = "/"
[[runs.signature]]
name = "my-oom"
pattern = "MyOOM"
label = "my OOM"
"""

PROJECT = """\
[notify]
repeat_interval = "90s"
[notify.email]
to = ["project@example.org"]
[[watch.disk]]
path = "/tmp"
max_used = "85%"
[[watch.disk]]
path = "/"
"""


@pytest.fixture
def layers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A user file under $HOME and a project file in the current folder."""
    home, project = tmp_path / "home", tmp_path / "project"
    user = home / ".config" / "rtool" / "rtool.toml"
    user.parent.mkdir(parents=True)
    project.mkdir()
    user.write_text(USER)
    (project / "rtool.toml").write_text(PROJECT)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    return user, project / "rtool.toml"


def _shown(cli, *args: str) -> dict:  # type: ignore[no-untyped-def,type-arg]
    res: CliResult = cli(*args, "config", "show", "--json", "--origin")
    assert res.code == 0, res.err
    return json.loads(res.out)  # type: ignore[no-any-return]


def test_project_file_layers_over_the_users_and_extends_the_watches(cli, layers) -> None:
    user, _ = layers
    doc = _shown(cli)
    assert doc["config_files"] == [str(user), "rtool.toml"]
    cfg = doc["config"]
    # the user's Slack channel survives the project's own watches (the bug of point 6)
    assert cfg["notify"]["slack"]["webhook_url_env"] == "TEAM_SLACK_URL"
    assert cfg["notify"]["min_failures"] == 2  # only the user's file says it
    assert cfg["notify"]["repeat_interval"] == "90s"  # both say it: the project's wins
    # a table merges key by key; an array of strings is a value: replaced whole
    assert cfg["notify"]["email"]["host"] == "smtp.example.org"
    assert cfg["notify"]["email"]["to"] == ["project@example.org"]
    # arrays of tables extend; the same entry in both files is watched once
    assert [d["path"] for d in cfg["watch"]["disk"]] == ["/", "/tmp"]
    assert cfg["watch"]["disk"][1]["max_used"] == "85%"
    assert [s["name"] for s in cfg["runs"]["signature"]] == ["my-oom"]
    origins = doc["origins"]
    assert origins["notify.repeat_interval"] == "rtool.toml:2"
    assert origins["notify.min_failures"] == f"{user}:2"
    assert origins["notify.email.host"] == f"{user}:7"
    assert origins["watch.disk.1.max_used"] == "rtool.toml:7"
    assert origins["watch.disk.0.path"] == f"{user}:11"
    assert origins["watch.disk.1.usable"] == "default"
    assert origins["slurm.timeout"] == "default"


def test_show_origin_comments_and_config_path(cli, layers) -> None:
    user, _ = layers
    res = cli("config", "show", "--origin")
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert 'repeat_interval = "90s" # from rtool.toml:2' in lines
    assert f'webhook_url_env = "TEAM_SLACK_URL" # from {user}:5' in lines
    assert "[[watch.disk]] # from rtool.toml:5" in lines
    assert 'timeout = "30s" # default' in lines
    res = cli("config", "path")
    assert res.code == 0 and res.out.splitlines() == [str(user), "rtool.toml"]


def test_an_empty_array_drops_the_earlier_entries(cli, layers) -> None:
    _, project = layers
    project.write_text("[watch]\ndisk = []\n[runs]\nsignature = []\n")
    cfg = _shown(cli)["config"]
    assert "disk" not in cfg["watch"] or cfg["watch"]["disk"] == []
    assert cfg["runs"]["signature"] == []
    assert cfg["notify"]["slack"]["webhook_url_env"] == "TEAM_SLACK_URL"


def test_config_and_rtool_config_name_exactly_the_files_read(
    cli, layers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user, _ = layers
    team = tmp_path / "team.toml"
    team.write_text('[notify]\nrepeat_interval = "2h"\n')
    # --config: only that file (the user's and the project's are not read)
    cfg = _shown(cli, "--config", str(team))["config"]
    assert cfg["notify"]["repeat_interval"] == "2h" and "slack" not in cfg["notify"]
    # repeated: layered in the order given
    doc = _shown(cli, "--config", str(user), "--config", str(team))
    assert doc["config"]["notify"]["repeat_interval"] == "2h"
    assert doc["config"]["notify"]["slack"]["webhook_url_env"] == "TEAM_SLACK_URL"
    assert doc["origins"]["notify.repeat_interval"] == f"{team}:2"
    # $RTOOL_CONFIG: one path or several joined by ':'
    monkeypatch.setenv("RTOOL_CONFIG", f"{team}{os.pathsep}{user}")
    assert config_files() == [team, user]
    doc = _shown(cli)
    assert doc["config_files"] == [str(team), str(user)]
    assert doc["config"]["notify"]["repeat_interval"] == "4h"
    monkeypatch.setenv("RTOOL_CONFIG", str(tmp_path / "missing.toml"))
    res = cli("config", "check")
    assert res.code == 2 and "missing.toml" in res.err and "No such file" in res.err


def test_errors_name_the_file_and_line_of_each_layer(cli, layers) -> None:
    user, project = layers
    user.write_text(USER + '[cron]\nkeep_logz = "7d"\n')
    project.write_text(PROJECT + '[slurm]\ntimeout = "soon"\n[[watch.disk]]\nmax_used = "99%"\n')
    res = cli("config", "check")
    assert res.code == 2, res.out
    assert f"cron.keep_logz ({user}:17): unknown key" in res.err
    assert "slurm.timeout (rtool.toml:11): not a duration" in res.err
    assert "watch.disk.2.path (rtool.toml:12): Field required" in res.err
    assert "Traceback" not in res.err


def test_a_layer_another_user_could_write_is_refused(cli, layers) -> None:
    _, project = layers
    os.chmod(project, 0o666)
    res = cli("config", "show")
    assert res.code == 2 and "rtool.toml" in res.err and "writable by" in res.err, res.err


def test_the_preflight_reads_exactly_the_layers_submit_read(cli, layers, tmp_path: Path) -> None:
    user, project = layers
    (tmp_path / "project" / "train.py").write_text("print('hi')\n")
    res = cli("submit", "train.py", "--gpus-per-node", "8", "--preflight", "--dry-run")
    assert res.code == 0, res.err
    (line,) = [x for x in res.out.splitlines() if x.endswith("|| _rtool_pf=$?")]
    argv = shlex.split(line.split(" || ")[0])
    assert argv[1:6] == ["--config", str(user), "--config", str(project.resolve()), "preflight"]


# -- the merge itself, on generated layers --------------------------------------------------

SCALAR = st.one_of(st.integers(), st.text(max_size=5), st.booleans())
ENTRY = st.dictionaries(st.sampled_from(["path", "name", "max"]), SCALAR, min_size=1)
TABLE = st.dictionaries(
    st.sampled_from(["a", "b", "c", "list", "entries"]),
    st.one_of(SCALAR, st.lists(SCALAR, max_size=3), st.lists(ENTRY, min_size=1, max_size=3)),
    max_size=4,
)
LAYER = st.dictionaries(st.sampled_from(["notify", "watch", "cron"]), TABLE, max_size=3)


@settings(max_examples=200, deadline=None, database=None)
@given(first=LAYER, second=LAYER)
def test_later_keys_win_and_arrays_of_tables_extend(first: dict, second: dict) -> None:  # type: ignore[type-arg]
    merged = Layered()
    merged.add(Layer(Path("a.toml"), "", first))
    merged.add(Layer(Path("b.toml"), "", second))
    for section, table in second.items():
        for key, value in table.items():
            got = merged.data[section][key]
            old = first.get(section, {}).get(key)
            tables = isinstance(value, list) and value and all(isinstance(v, dict) for v in value)
            old_tables = isinstance(old, list) and old and all(isinstance(v, dict) for v in old)
            if tables and old_tables:  # extended: the earlier entries, then the new ones once
                expected = list(old)
                expected += [e for n, e in enumerate(value) if e not in old + value[:n]]
                assert got == expected
                assert merged.origin((section, key, 0)).file == "a.toml"
            else:  # replaced whole
                assert got == value
                assert merged.origin((section, key)).file == "b.toml"
    for section, table in first.items():  # what the later file does not say stays
        for key, value in table.items():
            if key not in second.get(section, {}):
                assert merged.data[section][key] == value
                assert merged.origin((section, key)).file == "a.toml"
