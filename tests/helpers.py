"""Small helpers for tests (import as `from tests.helpers import wait_for`)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest


def wait_for(
    predicate: Callable[[], object],
    timeout: float = 60,
    interval: float = 0.5,
    what: str = "condition",
) -> object:
    """Poll `predicate` until it returns a truthy value; fail the test after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)
