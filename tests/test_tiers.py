"""The quick tier and `--beyond-quick` (what scripts/test runs on the second Slurm release)
split the suite in two: together they are every test, and no test is in both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: A file with both kinds: live Slurm tests, one listed in SLOW, and pure ones.
MIXED = "tests/hardening/test_records.py"


def _collected(*args: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return {line for line in out.stdout.splitlines() if "::" in line}


def test_the_two_tiers_split_the_suite() -> None:
    every = _collected(MIXED)
    quick, beyond = _collected("--quick", MIXED), _collected("--beyond-quick", MIXED)
    assert quick and beyond, (quick, beyond)
    assert quick | beyond == every
    assert not quick & beyond
    assert f"{MIXED}::test_a_symlink_swapped_in_never_gets_a_record" in beyond


def test_both_at_once_is_a_usage_error() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--quick", "--beyond-quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 4, out.stdout + out.stderr
    assert "choose one" in out.stderr
