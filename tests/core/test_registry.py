"""The one registry helper every plug-in kind uses (rtool/core/registry.py)."""

from __future__ import annotations

import sys

import pytest

from rtool.core.registry import Line, Registry, load


def test_a_line_is_imported_when_first_looked_up() -> None:
    sys.modules.pop("json.tool", None)
    reg: Registry[object] = Registry("thing", {"tool": "json.tool:main", "json": "json"})
    assert reg.names() == ["tool", "json"] and "tool" in reg and len(reg) == 2
    assert "json.tool" not in sys.modules  # naming it imports nothing
    import json
    import json.tool

    assert reg["tool"] is json.tool.main and reg["json"] is json  # "module": the module
    assert reg.all() == (json.tool.main, json)
    assert reg.get("nope") is None
    with pytest.raises(KeyError):
        reg["nope"]


def test_a_plugin_must_carry_its_lines_name() -> None:
    reg: Registry[object] = Registry(
        "channel", {"mail": "rtool.notify.channels.email:EmailChannel"}
    )
    with pytest.raises(ValueError, match="channel line 'mail' loads 'email'"):
        reg["mail"]


def test_plus_adds_lines_after_and_leaves_the_original() -> None:
    reg: Registry[object] = Registry("thing", {"a": "json:dumps"})
    more = reg.plus({"b": "json:loads"})
    assert more.names() == ["a", "b"] and reg.names() == ["a"] and more.kind == "thing"


def test_load_names_an_attribute_or_a_module() -> None:
    import os.path

    assert load("os.path:join") is os.path.join and load("os.path") is os.path
    with pytest.raises(ModuleNotFoundError):
        load("no_such_module_here:x")


def test_a_line_with_a_summary_is_listed_without_importing_its_plugin() -> None:
    """Commands: `rtool --help` shows each summary, and hides a hidden one, importing nothing."""
    sys.modules.pop("json.tool", None)
    reg: Registry[object] = Registry(
        "command", {"tool": Line("json.tool", "Pretty-print JSON."), "raw": "json"}
    )
    assert reg.line("tool") == Line("json.tool", "Pretty-print JSON.", hidden=False)
    assert reg.line("raw") == Line("json") and "json.tool" not in sys.modules
    import json.tool

    assert reg["tool"] is json.tool
    assert Registry("command", {"rec": Line("json", "x", hidden=True)}).line("rec").hidden
