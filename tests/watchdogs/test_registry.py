"""A new watchdog is one module and one registry line: the [watch] section, `rtool watch all`
and `rtool watch NAME` come from the registry (rtool/watchdogs/registry.py, watch_cmd.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field, ValidationError

from rtool.core.alert import Status
from rtool.core.config.types import Section
from rtool.watchdogs import registry
from rtool.watchdogs.base import CheckResult, ProbeEnv, SpecWatchdog
from rtool.watchdogs.config import WatchBase
from tests.conftest import CliResult

Cli = Callable[..., CliResult]


class ExistsWatch(Section):
    path: str = Field(description="A file that must exist.")
    warn_only: bool = Field(False, description="WARNING instead of CRITICAL.")


class ExistsWatchdog(SpecWatchdog[ExistsWatch]):
    """Does a file exist?"""

    name = "exists"
    spec = ExistsWatch

    def target(self, spec: ExistsWatch) -> str:
        return spec.path

    def probe(self, env: ProbeEnv) -> list[tuple[ExistsWatch, bool]]:
        return [(s, os.path.exists(s.path)) for s in self.specs]

    def check(self, probe_output: Any, now: float) -> list[CheckResult]:
        out = []
        for spec, exists in probe_output:
            bad = Status.WARNING if spec.warn_only else Status.CRITICAL
            status, text = (Status.OK, "exists") if exists else (bad, "is missing")
            out.append(CheckResult(self.name, spec.path, status, f"{spec.path} {text}"))
        return out


@pytest.fixture
def with_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registries with one more line, as a new watchdog's line would add."""
    here = "tests.watchdogs.test_registry"
    watchdogs = registry.WATCHDOGS.plus({"exists": f"{here}:ExistsWatchdog"})
    monkeypatch.setattr(registry, "WATCHDOGS", watchdogs)
    monkeypatch.setattr(
        registry, "ENTRIES", registry.ENTRIES.plus({"exists": f"{here}:ExistsWatch"})
    )


def test_registered_watchdog_gets_a_command(cli: Cli, tmp_path: Path, with_exists: Any) -> None:
    assert "exists" in cli("watch", "--help").out
    target = tmp_path / "ckpt"
    res = cli("watch", "exists", str(target), "--no-notify")
    assert res.code == 2 and f"EXISTS CRITICAL - {target} is missing" in res.out
    assert cli("watch", "exists", str(target), "--warn-only", "--no-notify").code == 1
    target.write_text("")
    res = cli("watch", "exists", str(target), "--no-notify", "--json")
    assert res.code == 0 and '"key": "exists:' in res.out
    missing = cli("watch", "exists")
    assert missing.code == 3 and "Missing argument" in missing.err


def test_registered_watchdog_gets_its_config_entries(with_exists: Any) -> None:
    model = registry.watch_config()
    watch = model.model_validate({"timeout": "5s", "exists": [{"path": "/nope"}]})
    assert watch.entries(ExistsWatch)[0].path == "/nope"
    built = registry.from_config(watch)
    assert [w.name for w in built] == ["exists"] and built[0].timeout == 5.0
    with pytest.raises(ValidationError):
        model.model_validate({"exists": [{"path": "/x", "bogus": 1}]})
    assert "exists" not in registry.WatchConfig.model_fields  # the shipped schema is unchanged


def test_shipped_registry_and_schema_agree() -> None:
    names = [w.name for w in registry.WATCHDOGS.all()]
    assert names == list(registry.LINES)
    configurable = {w.name for w in registry.WATCHDOGS.all() if w.in_config}
    own = set(WatchBase.model_fields)  # timeout, prom_textfile: not watchdogs
    assert configurable == set(registry.WatchConfig.model_fields) - own


def test_each_line_names_its_class_and_entry_type() -> None:
    for name, (_, entry) in registry.LINES.items():
        cls = registry.WATCHDOGS[name]
        assert cls.name == name and registry.by_name(name) is cls
        assert cls.in_config == (entry is not None)
        if entry:
            assert registry.ENTRIES[name] is cls.spec


def test_watch_disk_imports_no_other_watchdog() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from rtool.app.cli import main; main(['watch', 'disk', '/', '--no-notify']);"
        "print(sorted(m for m in sys.modules if m.startswith('rtool.watchdogs.')))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    mods = eval(res.stdout.strip().splitlines()[-1])
    assert "rtool.watchdogs.disk" in mods
    assert not {
        "rtool.watchdogs.job",
        "rtool.watchdogs.log",
        "rtool.watchdogs.run",
        "rtool.watchdogs.cron_chain",
    } & set(mods)
