"""Every shipped plug-in satisfies its kind's contract (tests/plugins/contract.py): the same
checks the plug-in test runs on a new one."""

from __future__ import annotations

import pytest

from rtool.app.commands.watch_cmd import WRITTEN
from rtool.app.plumbing.lazy import COMMANDS
from rtool.app.plumbing.sections import SECTIONS
from rtool.nodes.preflight.registry import CHECKS
from rtool.notify.channels import CHANNELS
from rtool.runs.signatures import SIGNATURES
from rtool.watchdogs.registry import WATCHDOGS
from tests.plugins import contract


@pytest.mark.parametrize("cls", WATCHDOGS.all(), ids=WATCHDOGS.names())
def test_watchdog(cls) -> None:
    assert contract.watchdog(cls) == []


@pytest.mark.parametrize("name", list(CHECKS))
def test_preflight_check(name: str) -> None:
    assert contract.check(CHECKS[name]) == []


@pytest.mark.parametrize("cls", CHANNELS.all(), ids=CHANNELS.names())
def test_channel(cls) -> None:
    assert contract.channel(cls) == []


@pytest.mark.parametrize("name", SIGNATURES.names())
def test_signature(name: str) -> None:
    assert contract.signature(SIGNATURES[name]) == []


@pytest.mark.parametrize("name", SECTIONS.names())
def test_config_section(name: str) -> None:
    assert contract.section(name, SECTIONS[name]) == []


@pytest.mark.parametrize("name", list(WRITTEN))
def test_watch_command(name: str) -> None:
    assert contract.watch_command(name) == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_command(name: str) -> None:
    assert contract.command(name) == []


def test_the_contract_sees_a_bad_declaration() -> None:
    from pydantic import Field

    from rtool.core.config.types import Section

    class NoHelp(Section):
        path: str = Field(...)

    class Bad:
        """Is it there?"""

        name = "Bad Name"
        spec = NoHelp
        in_config = True

    found = contract.watchdog(Bad)
    assert any("bad name" in p for p in found)
    assert any("Example" in p for p in found)
    assert any("'path' has no help" in p for p in found)
