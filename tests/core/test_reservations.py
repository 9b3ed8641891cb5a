"""Reservations as Slurm 22.05 and 24.11 print them (tests/core/captured/<release>/, written by
`python -m tests.core.captured.reservation`), and which one a pending job waits for."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rtool.core.slurm.nodes import candidate_nodes, parse_sinfo_nodes
from rtool.core.slurm.parse import parse_squeue
from rtool.core.slurm.reservations import (
    Reservation,
    may_wait_for_reservation,
    parse_reservations,
    reservation_wait,
)
from tests.core.test_captured import RELEASES, text


@pytest.mark.parametrize("release", RELEASES)
def test_a_maintenance_reservation_now_and_one_later_on_every_node(release: str) -> None:
    maint, later = parse_reservations(text(release, "show-reservation.txt"))
    assert (maint.name, maint.nodes, maint.state) == ("cap-maint", ("n3",), "ACTIVE")
    assert maint.maintenance and maint.users == ("root",) and "SPEC_NODES" in maint.flags
    assert maint.end is not None and maint.start is not None
    assert maint.end - maint.start == timedelta(hours=2)
    assert later.nodes == ("n1", "n2", "n3") and later.state == "INACTIVE"
    assert later.start is not None and later.start - maint.start == timedelta(hours=1)
    assert parse_reservations("No reservations in the system\n") == []


@pytest.mark.parametrize("release", RELEASES)
def test_the_jobs_pending_on_them_wait_until_they_end(release: str) -> None:
    resv = parse_reservations(text(release, "show-reservation.txt"))
    nodes = parse_sinfo_nodes(text(release, "sinfo-reservation.txt"))
    jobs = {j.name: j for j in parse_squeue(text(release, "squeue-reservation.txt"))}
    assert {n.state for n in nodes} == {"planned", "maint"} and not any(n.is_bad for n in nodes)
    now = resv[0].start.timestamp() + 60  # type: ignore[union-attr]
    for name, required in (("cap-resv-n3", "n3"), ("cap-resv-long", "(null)")):
        job = jobs[name]
        assert job.state == "PENDING" and may_wait_for_reservation(job.reason), job.reason
        usable = candidate_nodes({"ReqNodeList": required, "Partition": "debug"}, nodes)
        wait = reservation_wait(usable, job.nodes, resv, now, job.time_limit)
        assert wait is not None and wait.reservation.maintenance, name
        assert wait.until == resv[0].end and wait.describe().startswith("the maintenance ")
    # a short job on n1 fits before the later one: nothing to wait for
    assert reservation_wait(["n1"], 1, resv, now, 600.0) is None
    assert reservation_wait(["n3"], 1, resv, now, 600.0, own="cap-maint") is None


def _r(name: str, start: float, end: float, nodes: tuple[str, ...]) -> Reservation:
    t = datetime.fromtimestamp
    return Reservation(name, t(start).astimezone(), t(end).astimezone(), nodes, frozenset())


@given(
    st.lists(
        st.tuples(st.integers(-100, 5000), st.integers(1, 5000), st.sets(st.sampled_from("abcd"))),
        max_size=5,
    ),
    st.sets(st.sampled_from("abcde"), min_size=1),
    st.integers(1, 4),
    st.one_of(st.none(), st.integers(1, 10_000)),
)
def test_a_wait_ends_in_the_future_and_only_when_too_few_nodes_are_free(
    spans: list[tuple[int, int, set[str]]], usable: set[str], needed: int, limit: int | None
) -> None:
    now = 1_000_000.0
    resv = [
        _r(f"r{i}", now + s, now + s + d, tuple(sorted(n))) for i, (s, d, n) in enumerate(spans)
    ]
    wait = reservation_wait(sorted(usable), needed, resv, now, limit)
    if wait is None:
        return
    held = {
        n for r in resv if r.blocks(now, None if limit is None else now + limit) for n in r.nodes
    }
    assert len(usable - held) < needed <= len(usable)
    assert wait.until.timestamp() > now and wait.reservation in resv
