"""Every default is written once, in a declaration, and every command reads it from there.

On every help page of the CLI: an option made from a config field (`rtool watch NAME`,
`rtool preflight`) shows that field's default and has none of its own; an option that names a
config key as its default (`(default: [watch] timeout, 10s)`) names a real key and its real
built-in default; and no option carries a default value of its own that the config could give.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from rtool.app.plumbing.fromspec import default_note
from rtool.app.plumbing.sections import config_field
from rtool.core.config.fields import cli_of, shown_default
from tests.app.helppages import CONFIG_DEFAULT, pages

OPTIONS = [
    (" ".join(path), param)
    for path, cmd in pages()
    for param in getattr(cmd, "params", [])
    if param.param_type_name == "option" and param.name != "help"
]
#: Options whose own default is not a config value (counts, the global --verbose).
OWN_DEFAULTS = {("", "verbose"), ("silence add", "reason"), ("cron install", "backend")}


def _ids(items: list[tuple[str, Any]]) -> list[str]:
    return [f"{where or 'rtool'} {p.opts[0]}" for where, p in items]


@pytest.mark.parametrize(("where", "param"), OPTIONS, ids=_ids(OPTIONS))
def test_config_defaults_named_in_a_help_are_the_configs(where: str, param: Any) -> None:
    for section, key, value in CONFIG_DEFAULT.findall(_text(param)):
        _, info = config_field(f"{section}.{key}")  # KeyError: no such config key
        assert (value or None) == shown_default(info), f"{param.opts[0]}: [{section}] {key}"


@pytest.mark.parametrize(("where", "param"), OPTIONS, ids=_ids(OPTIONS))
def test_a_default_value_in_a_help_comes_from_a_declaration(where: str, param: Any) -> None:
    """A value written as a default in a help text is a config key's (`(default: [watch]
    timeout, 10s)`) or, for an option made from a field, that field's: never typed by hand."""
    if getattr(param, "rtool_field", None):
        return  # test_a_made_option_shows_its_fields_default
    text = CONFIG_DEFAULT.sub("", _text(param))
    assert not re.search(r"default[: ][^)]*\d", text, re.IGNORECASE), text


@pytest.mark.parametrize(("where", "param"), OPTIONS, ids=_ids(OPTIONS))
def test_no_option_has_a_default_of_its_own(where: str, param: Any) -> None:
    """Not given, an option is None (the declaration or the config decides); a flag is off."""
    if (where, param.name) in OWN_DEFAULTS:
        return
    if param.is_flag or param.count:
        assert param.default in (None, False, True), param.opts
        return
    assert param.default in (None, (), []), f"{where} {param.opts[0]} defaults to {param.default!r}"


DECLARED = [(w, p) for w, p in OPTIONS if getattr(p, "rtool_field", None)]


def test_the_made_commands_are_tagged() -> None:
    assert {w for w, _ in DECLARED} >= {"watch disk", "watch job", "watch run", "watch cron"}


@pytest.mark.parametrize(("where", "param"), DECLARED, ids=_ids(DECLARED))
def test_a_made_option_shows_its_fields_default(where: str, param: Any) -> None:
    model, name, section = param.rtool_field
    info = model.model_fields[name]
    cli = cli_of(info)
    text = _text(param)
    if section is not None:
        assert default_note(f"{section}.{name}") in text
    elif cli.default_from:
        assert default_note(cli.default_from) in text
    elif cli.switch is None and not isinstance(info.default, bool) and shown_default(info):
        assert f"(default: {shown_default(info)})" in text
    else:  # may say in words what happens when it is left out, but names no value
        assert not re.search(r"\(default: [^)]*\d", text), text


def _text(param: Any) -> str:
    """The option's help as shown (tidy escapes `[` for rich)."""
    return " ".join((param.help or "").replace("\\[", "[").split())


def test_an_entry_and_the_command_line_make_the_same_defaults() -> None:
    """What `rtool watch NAME` makes from its required arguments alone is what a config entry
    with only those keys gives (issue #30: `[[watch.disk]]` had no `max_used`, the CLI 90%)."""
    from rtool.app.plumbing import fromspec, watch_common
    from rtool.watchdogs.registry import WATCHDOGS

    for w in WATCHDOGS.all():
        declared = fromspec.declare(w.spec, skip=watch_common.COMMON_NAMES)
        required = {n: _sample(i) for n, i in w.spec.model_fields.items() if i.is_required()}
        given = {n: ([v] if declared.made[n].each else v) for n, v in required.items()}
        [from_cli] = fromspec.entries(declared, given)
        assert from_cli == w.spec.model_validate(required), w.name


def _sample(info: Any) -> Any:
    return "x" if info.annotation is str else 1
