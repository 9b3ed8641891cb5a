"""Without a config file, sections are made one at a time on first use
(rtool/app/plumbing/defaults.py, sections.py), and they must be exactly what validating an empty
config gives."""

from __future__ import annotations

from typing import Any

import pytest

from rtool.app.plumbing.appconfig import Config
from rtool.app.plumbing.context import AppContext
from rtool.app.plumbing.defaults import DefaultConfig
from rtool.app.plumbing.sections import LINES, SECTIONS


def test_the_config_is_made_from_the_section_lines() -> None:
    assert list(Config.model_fields) == list(LINES)
    for name, info in Config.model_fields.items():
        assert SECTIONS[name] is info.annotation, name
        assert info.default == SECTIONS[name](), name


@pytest.mark.parametrize("name", list(SECTIONS))
def test_each_default_section_equals_the_validated_one(name: str) -> None:
    made = getattr(DefaultConfig(), name)
    validated = getattr(Config.model_validate({}), name)
    assert type(made) is type(validated)
    assert made == validated
    assert made.model_dump() == validated.model_dump()


def test_what_is_not_a_section_comes_from_a_real_config() -> None:
    config: Any = DefaultConfig()
    assert config.model_dump() == Config().model_dump()
    assert config.model_fields_set == set()
    with pytest.raises(AttributeError):
        config.no_such_thing  # noqa: B018


def test_no_config_file_gives_the_defaults(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RTOOL_CONFIG", raising=False)
    assert isinstance(AppContext().config, DefaultConfig)
    (tmp_path / "rtool.toml").write_text("[watch]\ntimeout = '3s'\n")
    config = AppContext().config
    assert isinstance(config, Config) and config.watch.timeout == 3.0
