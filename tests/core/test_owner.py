"""Whose job, whose file: the pure half of the user scoping (rtool/core/slurm/owner.py,
rtool/core/identity.py), on captured `scontrol show job` lines and real files."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtool.core import identity
from rtool.core.slurm import owner
from rtool.core.slurm.parse import parse_scontrol_show_job
from rtool.core.validate import ArgvError

#: Captured on the local cluster (Slurm 22.05): a job of uid 1001 (first line trimmed).
THEIRS = """JobId=12 JobName=train
   UserId=rtool-peer(1001) GroupId=rtool-peer(1002) MCS_label=N/A
   Priority=1 Nice=0 Account=(null) QOS=(null)
   JobState=PENDING Reason=BeginTime Dependency=(null)
"""


def test_record_uid_reads_scontrol_output() -> None:
    (rec,) = parse_scontrol_show_job(THEIRS)
    assert owner.record_uid(rec) == 1001
    assert owner.record_uid({"UserId": "root(0)"}) == 0
    assert owner.record_uid({"UserId": "alice"}) is None  # no uid: not yours
    assert owner.record_uid({}) is None


def test_foreign_names_the_owner_unless_every_record_is_yours() -> None:
    me = identity.current_user()
    mine = {"UserId": f"{me}({os.getuid()})"}
    assert owner.foreign([mine, mine], "12", me) is None
    (theirs,) = parse_scontrol_show_job(THEIRS)
    why = owner.foreign([mine, theirs], "12", me)
    assert why == f"job 12 belongs to rtool-peer(1001), not to you ({me}): not touched"
    assert owner.foreign([{"JobId": "12"}], "12", me) is not None  # owner unknown: refused


@pytest.mark.parametrize(
    ("args", "ids"),
    [
        (["hold", "12"], ["12"]),
        (["requeuehold", "12_3"], ["12_3"]),
        (["RELEASE", "12", "13"], ["12", "13"]),
        (["update", "JobId=12", "TimeLimit=5"], ["12"]),
        (["update", "jobid=12_[2-4]", "ExcNodeList=n1"], ["12_[2-4]"]),
        (["update", "NodeName=n1", "State=resume"], None),
        (["write", "batch_script", "12_3", "-"], ["12_3"]),  # reading its script (rtool drill)
        (["show", "job", "12"], None),
        (["show", "reservation"], None),
        (["ping"], None),
        ([], None),
    ],
)
def test_acted_on_finds_the_jobs_an_scontrol_command_changes(
    args: list[str], ids: list[str] | None
) -> None:
    assert owner.acted_on(args) == ids


@settings(max_examples=200)
@given(st.sampled_from(["hold", "release", "requeue", "update"]), st.lists(st.text(max_size=12)))
def test_acted_on_returns_valid_ids_or_refuses(verb: str, rest: list[str]) -> None:
    args = [verb, *(f"JobId={r}" if verb == "update" else r for r in rest)]
    try:
        ids = owner.acted_on(args)
    except ArgvError:
        return
    assert ids is None or all(i[:1].isdigit() and i.isascii() for i in ids)
    if verb != "update":
        assert ids == [r.strip() for r in rest]


@settings(max_examples=200)
@given(st.text(max_size=20))
def test_user_arg_is_a_login_name_or_a_uid(text: str) -> None:
    try:
        out = owner.user_arg(text)
    except ArgvError:
        return
    assert out.isascii() and not out.startswith("-") and "," not in out


def test_identity_is_the_uid_not_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", "someone-else")
    monkeypatch.setenv("LOGNAME", "someone-else")
    me = pwd.getpwuid(os.getuid()).pw_name
    assert identity.current_user() == me
    assert identity.is_mine(me) and identity.is_mine(str(os.getuid()))
    assert not identity.is_mine("someone-else") and not identity.is_mine("")


def test_foreign_owner_and_writable_by_others(tmp_path: Path) -> None:
    f = tmp_path / "switch"
    assert identity.foreign_owner(f) is None  # nothing there
    f.touch()
    assert identity.foreign_owner(f) is None
    os.chown(f, 54321, -1)
    assert identity.foreign_owner(f) == 54321
    link = tmp_path / "link"
    link.symlink_to(f)
    assert identity.foreign_owner(link) is None  # the link itself is yours (see switchfile)
    d = tmp_path / "d"
    d.mkdir(mode=0o755)
    assert identity.writable_by_others(d) is None
    d.chmod(0o2775)
    assert identity.writable_by_others(d) == "group-writable (mode 2775)"
    d.chmod(0o1777)
    assert identity.writable_by_others(d) == "world-writable (mode 1777)"
