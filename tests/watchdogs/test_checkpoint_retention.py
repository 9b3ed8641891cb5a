"""checkpoint watchdog retention: keep the last N complete and every Nth step, delete older
ones only once the newer ones are complete, never through a symlink, never another user's
files, never in a folder others may write to. Deletes are carried out by `rtool watch`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from devtools.localslurm.users import LocalUser
from rtool.watchdogs.base import Action, ActionKind
from tests.watchdogs.ckptfiles import file_ckpt, folder_ckpt


def _watch(cli, folder: Path, *flags: str) -> dict:  # type: ignore[no-untyped-def]
    res = cli("watch", "checkpoint", str(folder), *flags, "--json", "--no-notify")
    assert res.code in (0, 1, 2), res.out + res.err
    return json.loads(res.out)["results"][0]


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _steps(folder: Path, *steps: int) -> None:
    """Complete checkpoints saved 100 s apart, the newest 100 s ago."""
    for i, step in enumerate(steps):
        folder_ckpt(folder, f"step_{step:06d}", old=(len(steps) - i) * 100.0)


def test_keep_last_and_every_nth_never_what_is_newer(tmp_path: Path, cli) -> None:
    ck = tmp_path / "ckpt"
    _steps(ck, 100, 200, 300, 400, 500, 600)
    folder_ckpt(ck, "step_000700", files=("model.bin",), marker=None)  # being written now
    r = _watch(cli, ck, "--keep-last", "2", "--keep-every", "300", "--marker", "{NAME}/COMPLETE")
    assert r["status"] == "OK", r["summary"]
    assert r["fields"]["retention"] == f"deleted step_000100, step_000200, step_000400 in {ck}"
    assert _names(ck) == ["step_000300", "step_000500", "step_000600", "step_000700"]
    # the one being written stopped without its marker: it is not complete, 600 stays
    os.utime(ck / "step_000700", (1, 1))
    os.utime(ck / "step_000700" / "model.bin", (1, 1))
    r = _watch(cli, ck, "--keep-last", "1", "--marker", "{NAME}/COMPLETE")
    assert r["status"] == "CRITICAL" and "step_000700 incomplete" in r["summary"]
    assert _names(ck) == ["step_000600", "step_000700"]


def test_nothing_is_deleted_before_keep_last_are_complete(tmp_path: Path, cli) -> None:
    ck = tmp_path / "ckpt"
    _steps(ck, 100, 200)
    r = _watch(cli, ck, "--keep-last", "3")
    assert "retention" not in r["fields"] and _names(ck) == ["step_000100", "step_000200"]


def test_symlinks_are_neither_checkpoints_nor_followed(tmp_path: Path, cli) -> None:
    ck, outside = tmp_path / "ckpt", tmp_path / "precious"
    folder_ckpt(outside, "step_000001", old=9000)
    _steps(ck, 100, 200, 300)
    (ck / "step_000050").symlink_to(outside / "step_000001")  # an old "checkpoint": a link
    (ck / "step_000100" / "data").symlink_to(outside)  # a link inside an old checkpoint
    r = _watch(cli, ck, "--keep-last", "1")
    assert r["fields"]["retention"] == f"deleted step_000100, step_000200 in {ck}"
    assert _names(ck) == ["step_000050", "step_000300"]
    assert (outside / "step_000001" / "model.bin").exists()
    assert r["fields"]["checkpoints"] == "3"  # the link is not counted


def test_another_users_files_are_never_deleted(tmp_path: Path, cli, peer: LocalUser) -> None:
    ck = tmp_path / "ckpt"
    _steps(ck, 100, 200, 300, 400)
    theirs = ck / "step_000100"
    for p in (theirs, *theirs.iterdir()):
        os.chown(p, peer.uid, peer.gid, follow_symlinks=False)
    planted = ck / "step_000200" / "planted.bin"
    planted.write_bytes(b"x")
    os.chown(planted, peer.uid, peer.gid)
    r = _watch(cli, ck, "--keep-last", "1")
    assert r["fields"]["retention"] == (
        f"deleted step_000300 in {ck}; refused step_000200 ({planted} is another user's)"
    )
    assert _names(ck) == ["step_000100", "step_000200", "step_000400"]
    assert (theirs / "model.bin").exists() and planted.exists()
    # what is left to delete is tried once more, then not again at every sweep
    r = _watch(cli, ck, "--keep-last", "1")
    assert r["fields"]["retention"].startswith(f"deleted nothing in {ck}; refused step_000200")
    r = _watch(cli, ck, "--keep-last", "1")
    assert "retention" not in r["fields"], r["fields"]


def test_no_retention_in_a_folder_others_may_write(tmp_path: Path, cli) -> None:
    ck = tmp_path / "ckpt"
    _steps(ck, 100, 200, 300)
    ck.chmod(0o775)
    r = _watch(cli, ck, "--keep-last", "1")
    assert r["status"] == "WARNING"
    assert "retention held: the folder is writable by group or others (mode 0775)" in r["summary"]
    assert len(_names(ck)) == 3
    ck.chmod(0o755)
    r = _watch(cli, ck, "--keep-last", "1")
    assert r["status"] == "OK" and _names(ck) == ["step_000300"]


def test_single_file_checkpoints_are_pruned_too(tmp_path: Path, cli) -> None:
    ck = tmp_path / "ckpt"
    ck.mkdir()
    for i, step in enumerate((100, 200, 300)):
        file_ckpt(ck, f"epoch=0-step={step}.ckpt", old=300 - i * 100)
    file_ckpt(ck, "last.ckpt", old=0)  # no step: not a checkpoint by name, never touched
    r = _watch(cli, ck, "--keep-last", "1")
    assert r["status"] == "OK"
    assert _names(ck) == ["epoch=0-step=300.ckpt", "last.ckpt"]


def test_the_delete_action_is_typed_and_named() -> None:
    a = Action.delete("/scratch/ckpt", ("step_1", "step_2"))
    assert a.kind is ActionKind.DELETE and a.names == ("step_1", "step_2")
    assert str(a) == "delete:/scratch/ckpt:step_1,step_2"
