"""`rtool drill`'s own errors: one line, exit 3 (UNKNOWN, as for a watchdog), no traceback;
checked before anything reaches Slurm."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtool.slurm_templates.specs import SpecError, validate_signal


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["llm", "--array", "1-3"], "--array: for --submit only"),
        (["llm", "--and-submit"], "--and-submit: for --submit only"),
        (["llm", "--signal", "B:KILL@60"], "cannot forward SIGKILL"),
        (["llm", "--start-timeout", "soon"], "--start-timeout: not a duration: 'soon'"),
        (["llm", "--bogus"], "No such option: --bogus"),
        (["llm", "--grace", "20s"], "--grace: for --preempt only"),
        (["llm", "--preempt", "--grace", "0"], "--grace: must be more than 0s"),
        (["llm", "--preempt", "--grace", "soon"], "--grace: not a duration: 'soon'"),
        (["--submit", "no-such-script.py"], "cannot read no-such-script.py"),
        ([], "Missing argument 'TARGET'"),
    ],
)
def test_bad_input_is_one_line_and_unknown(
    cli: Callable[..., Any], args: list[str], says: str
) -> None:
    r = cli("--no-config", "drill", *args)
    assert r.code == 3, r
    assert r.out == "" and len(r.err.strip().splitlines()) == 1 and says in r.err, r.err


def _bad(text: str) -> bool:
    try:
        validate_signal(text)
    except SpecError:
        return True
    return False


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=30).filter(lambda t: not t.startswith("-")).filter(_bad))
def test_any_bad_signal_is_refused_in_one_line(cli: Callable[..., Any], spec: str) -> None:
    r = cli("--no-config", "drill", "llm", "--signal", spec)
    assert r.code == 3 and "Traceback" not in r.err and r.err.startswith("rtool: "), r.err
