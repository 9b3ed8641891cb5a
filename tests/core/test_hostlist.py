"""The host list compressor: the inverse of expand_hostlist, and what Slurm itself prints.

`scontrol show hostlist` only reads slurm.conf (it asks no daemon), so the comparison runs
against the session's Slurm release (its clients are first on PATH: tests/conftest.py) with a
small config of its own.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtool.core.slurm import compress_hostlist, expand_hostlist
from rtool.core.slurm.hostlist import sort_hosts

PREFIXES = ["n", "gpu", "r1n", "node-", "a.b", "x_", ""]


@st.composite
def host(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 9)) == 0:  # a name without a number
        return draw(st.sampled_from(["login", "a", "node-x", "head"]))
    prefix = draw(st.sampled_from(PREFIXES))
    num = draw(st.integers(0, 1200))
    width = draw(st.sampled_from([0, 0, 0, 2, 3, 4]))
    return f"{prefix}{num:0{width}d}"


hosts = st.lists(host(), min_size=1, max_size=40)


@pytest.fixture(scope="module")
def scontrol_conf(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    conf = tmp_path_factory.mktemp("hostlist") / "slurm.conf"
    conf.write_text(
        "ClusterName=x\nSlurmctldHost=localhost\nNodeName=n1\nPartitionName=p Nodes=n1\n"
    )
    return {"SLURM_CONF": str(conf), "PATH": os.environ["PATH"]}


def slurm_says(names: list[str], env: dict[str, str]) -> str:
    res = subprocess.run(
        ["scontrol", "show", "hostlist", ",".join(names)],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=True,
    )
    return res.stdout.strip()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names=hosts)
def test_compressed_exactly_as_slurm_prints_it(names: list[str], scontrol_conf) -> None:
    assert compress_hostlist(names) == slurm_says(names, scontrol_conf)


@settings(max_examples=500, deadline=None)
@given(names=hosts)
def test_expanding_the_compressed_list_gives_the_names_back(names: list[str]) -> None:
    text = compress_hostlist(names)
    assert expand_hostlist(text) == names
    once = compress_hostlist(names, sort=True)
    assert expand_hostlist(once) == sort_hosts(names)


def test_examples_and_size_at_scale() -> None:
    assert compress_hostlist([]) == ""
    assert compress_hostlist(["n3", "n1", "n2"]) == "n[3,1-2]"
    assert compress_hostlist(["n3", "n1", "n2", "n1"], sort=True) == "n[1-3]"
    assert compress_hostlist(["n10", "n2", "gpu01", "gpu02", "login"], sort=True) == (
        "gpu[01-02],login,n[2,10]"
    )
    assert compress_hostlist(["n9", "n10", "n1", "n01"]) == "n[9-10,1,01]"
    names = [f"gpu{i:05d}" for i in range(1, 10001)]
    assert compress_hostlist(names) == "gpu[00001-10000]"
    every_other = names[::2]
    text = compress_hostlist(every_other)
    assert expand_hostlist(text) == every_other
    assert len(text) < 0.75 * len(",".join(every_other))


def test_the_session_release_answers(scontrol_conf) -> None:
    """The comparison above really ran Slurm (not an empty answer matching an empty list)."""
    assert slurm_says(["n1", "n2", "n5"], scontrol_conf) == "n[1-2,5]"


def test_long_digit_runs_are_linear_and_never_raise() -> None:
    """Issue 36 finding 6: a heartbeat's host is outside text; 20,000 digits took 2 s and past
    4,300 digits sorting raised ValueError. Timed at growing sizes: doubling the length at most
    about doubles the time (bounds generous for a loaded machine), and the largest stays fast."""
    import time

    def cost(n: int) -> float:
        names = ["n" + "1" * n + "x", "n" + "2" * n, "n" + "0" * n + "3", "n" + "2" * n]
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            compress_hostlist(names, sort=True)
            compress_hostlist(names)
            best = min(best, time.perf_counter() - t)
        return best

    times = [cost(n) for n in (20_000, 40_000, 80_000, 160_000)]
    assert max(times) < 0.5, times  # quadratic: 20,000 digits took 2 s, 160,000 would take ~2 min
    assert times[-1] < 16 * max(times[0], 0.01), times  # quadratic would be 64x
    n = 5_000
    assert compress_hostlist(["a" + "9" * n, "a" + "1" + "0" * n, "a" + "0" * n], sort=True) == (
        f"a{'0' * n},a{'9' * n},a1{'0' * n}"  # past 18 digits a name stands alone, as in Slurm
    )
