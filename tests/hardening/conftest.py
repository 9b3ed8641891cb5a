"""Hardening tests (issue 16): hostile files, bad input, full disks.

The hypothesis profile keeps the property suite fast: few examples, no deadline (a CLI call
is slow on a loaded 2-core machine), no database written into the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "rtool",
    max_examples=int(os.environ.get("RTOOL_HYPOTHESIS_EXAMPLES", "20")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
    derandomize=False,
)
settings.load_profile("rtool")

#: A uid that is neither the test's user nor root (files chowned to it are "another user's").
OTHER_UID = 54321


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Generated configs may name relative state dirs: never create them in the checkout."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder as the current directory."""
    d = tmp_path / "work"
    d.mkdir()
    monkeypatch.chdir(d)
    return d


def no_traceback(text: str) -> None:
    assert "Traceback" not in text, text
    assert "internal error" not in text, text
