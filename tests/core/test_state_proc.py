from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from rtool.core.proc import ProcError, ProcNotFound, ProcTimeout, run
from rtool.core.state import StateDir, StateDirError


def test_state_dir_created_private(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "state")
    assert stat.S_IMODE(sd.path.stat().st_mode) == 0o700
    sd.write_json("alerts/x.json", {"a": 1})
    assert sd.read_json("alerts/x.json") == {"a": 1}
    assert stat.S_IMODE((sd.path / "alerts" / "x.json").stat().st_mode) == 0o600


def test_state_dir_symlink_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(StateDirError, match="symlink"):
        StateDir(tmp_path / "link")


def test_state_dir_foreign_owner_refused(tmp_path: Path) -> None:
    d = tmp_path / "theirs"
    d.mkdir()
    os.chown(d, 12345, 12345)
    with pytest.raises(StateDirError, match="owned by uid 12345"):
        StateDir(d)


def test_atomic_writes_never_show_a_torn_file(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "s")
    big = {"k": "x" * 200_000}
    stop = threading.Event()
    bad: list[object] = []

    def reader() -> None:
        while not stop.is_set():
            v = sd.read_json("f.json", default="missing")
            if v not in ("missing", big, {"k": "y"}):
                bad.append(v)

    t = threading.Thread(target=reader)
    t.start()
    for i in range(60):
        sd.write_json("f.json", big if i % 2 else {"k": "y"})
    stop.set()
    t.join()
    assert bad == []


def test_lock_serialises(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "s")
    with sd.lock("x") as got:
        assert got
        with sd.lock("x", blocking=False) as again:
            assert again is False


def test_run_ok_and_errors_carry_command_and_stderr() -> None:
    assert run(["echo", "hi"], timeout=5).stdout == "hi\n"
    with pytest.raises(ProcError) as exc:
        run(["sh", "-c", "echo boom >&2; exit 3"], timeout=5)
    assert exc.value.returncode == 3
    assert "exit code 3" in str(exc.value) and "boom" in str(exc.value)
    assert "sh -c" in str(exc.value)
    with pytest.raises(ProcNotFound):
        run(["no-such-program-xyz"], timeout=5)


def test_run_timeout_kills_the_group() -> None:
    t0 = time.monotonic()
    with pytest.raises(ProcTimeout, match=r"timed out after 0\.5s"):
        run(["sh", "-c", "sleep 30 & sleep 30"], timeout=0.5)
    assert time.monotonic() - t0 < 5
