"""Issue 36: the bad-input leftovers of the generated run and the earlier audit, one test each:
one clear line, the right exit code, never a traceback."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from rtool.core.slurm import Slurm, SlurmError
from rtool.core.state import StateDir, StateDirError


def test_a_format_json_of_the_wrong_type_is_corrupt_not_newer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for bad in ('{"format": "2"}', '{"format": true}', '{"format": [1]}', "{}", '{"format": -1}'):
        state = tmp_path / f"state-{len(list(tmp_path.iterdir()))}"
        state.mkdir(mode=0o700)
        (state / "format.json").write_text(bad)
        caplog.clear()
        StateDir(state)  # no StateDirError: corrupt, moved aside, the folder marked again
        assert json.loads((state / "format.json").read_text())["format"] >= 1
        aside = [p.name for p in state.iterdir() if p.name.startswith("format.json.corrupt-")]
        assert len(aside) == 1, bad
        assert "is corrupt (format" in caplog.text and "not a version number" in caplog.text
    newer = tmp_path / "newer"
    newer.mkdir(mode=0o700)
    (newer / "format.json").write_text('{"format": 999, "created_by": "rtool 9.0"}')
    with pytest.raises(StateDirError, match=r"has format 999 \(made by rtool 9.0\)"):
        StateDir(newer)  # a valid newer format is still refused


def test_watch_cron_on_a_file_fifo_or_device_is_unknown(tmp_path: Path, cli) -> None:
    file, fifo = tmp_path / "file", tmp_path / "fifo"
    file.write_text("x")
    os.mkfifo(fifo)
    for target, kind in ((file, "a file"), (fifo, "a FIFO"), (Path("/dev/zero"), "a device")):
        r = cli("watch", "cron", "--dir", str(target), "--no-notify")
        assert r.code == 3, r.out + r.err
        assert r.out.startswith(f"CRON UNKNOWN - cron dir {target} is {kind}, not a folder")
    r = cli("watch", "cron", "--dir", str(file / "sub"), "--no-notify")
    assert r.code == 3 and f"cron dir {file}/sub: {file} is a file, not a folder" in r.out
    r = cli("cron", "status", "--dir", str(file / "sub"))
    assert r.code == 2
    assert r.err.strip().splitlines() == [
        f"rtool: cron dir {file}/sub: {file} is a file, not a folder"
    ]


def test_watch_log_on_a_folder_is_unknown(tmp_path: Path, cli) -> None:
    r = cli("watch", "log", str(tmp_path), "--no-notify")
    assert r.code == 3, r.out + r.err
    assert r.out.startswith(
        f"LOG UNKNOWN - {tmp_path}: is a folder, not a log file (give a file or a glob)"
    )


def test_submit_with_a_binary_template_is_a_usage_error(tmp_path: Path, cli) -> None:
    folder = tmp_path / "t"
    folder.mkdir(mode=0o755)
    (folder / "bin.j2").write_bytes(b"#!/bin/sh\n\xff\xfe\x00\x01{{ job }}\n")
    script = folder / "train.py"
    script.write_text("print(1)\n")
    r = cli("submit", "--template", str(folder / "bin.j2"), "--dry-run", str(script))
    assert r.code == 2, r.out + r.err
    assert r.err.strip().splitlines()[-1] == (
        "rtool: template bin.j2: not UTF-8 text (byte 0xff at offset 10)"
    )


def test_an_empty_sbatch_answer_is_slurms_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "bin" / "sbatch"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\ncat >/dev/null\nexit 0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    with pytest.raises(SlurmError, match="sbatch --parsable: sbatch printed no job id"):
        Slurm(timeout=10).sbatch([], script="#!/bin/sh\ntrue\n")
