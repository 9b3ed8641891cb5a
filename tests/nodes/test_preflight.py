"""The pre-flight checks of one node, on nvidia-smi outputs kept in nvidia_smi/ (see its
README), through a stand-in `nvidia-smi` script; a hung one is bounded by the timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rtool.core.gpu import parse_csv
from rtool.nodes.preflight import ecc, gpus
from rtool.nodes.preflight.node import from_line, run_checks, to_line
from rtool.nodes.preflight.registry import NodeContext

DATA = Path(__file__).parent / "nvidia_smi"


def fake_smi(tmp_path: Path, gpus_file: str, ecc_file: str, sleep: float = 0) -> str:
    """An executable answering --query-gpu like nvidia-smi, from the kept outputs."""
    script = tmp_path / "nvidia-smi"
    script.write_text(
        "#!/bin/bash\n"
        f"sleep {sleep}\n"
        'case "$1" in\n'
        f"  *ecc*) cat {DATA / ecc_file} ;;\n"
        f"  *) cat {DATA / gpus_file} ;;\n"
        "esac\n"
    )
    script.chmod(0o755)
    return str(script)


def test_parse_healthy_8xh100():
    rows, problems = parse_csv((DATA / "gpus_healthy_8xh100.csv").read_text(), 4)
    assert len(rows) == 8 and not problems
    assert rows[0][2] == "NVIDIA H100 80GB HBM3" and rows[7][1] == "00000000:DB:00.0"


def test_healthy_node_passes(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    smi = fake_smi(tmp_path, "gpus_healthy_8xh100.csv", "ecc_healthy_8xh100.csv")
    report = run_checks(NodeContext(gpus=8, nvidia_smi=smi, timeout=10))
    assert report.ok, report.summary()
    assert [o.check for o in report.outcomes] == ["gpus", "ecc"]
    assert "8 GPUs visible (NVIDIA H100 80GB HBM3)" in report.outcomes[0].detail


def test_missing_gpu_fails_naming_the_lost_one(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    smi = fake_smi(tmp_path, "gpus_missing_one.csv", "ecc_healthy_8xh100.csv")
    out = gpus.run(NodeContext(gpus=8, nvidia_smi=smi, timeout=10))
    assert not out.ok
    assert out.detail.startswith("7 GPUs visible, 8 requested; Unable to determine")
    assert "5D:00.0" in out.output


def test_cuda_visible_devices_must_exist(tmp_path, monkeypatch):
    smi = fake_smi(tmp_path, "gpus_missing_one.csv", "ecc_healthy_8xh100.csv")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    out = gpus.run(NodeContext(gpus=2, nvidia_smi=smi, timeout=10))
    assert not out.ok and "GPU(s) 3" in out.detail


def test_ecc_errors_fail(tmp_path):
    smi = fake_smi(tmp_path, "gpus_healthy_8xh100.csv", "ecc_uncorrectable.csv")
    out = ecc.run(NodeContext(gpus=8, nvidia_smi=smi, timeout=10))
    assert not out.ok
    assert out.detail == "GPU 3 2 uncorrectable ECC error(s); GPU 3 row remapping pending"


def test_hung_nvidia_smi_is_bounded(tmp_path):
    smi = fake_smi(tmp_path, "gpus_healthy_8xh100.csv", "ecc_healthy_8xh100.csv", sleep=60)
    start = time.monotonic()
    report = run_checks(NodeContext(gpus=8, nvidia_smi=smi, timeout=1))
    assert time.monotonic() - start < 10
    assert not report.ok
    assert report.outcomes[0].detail == "nvidia-smi did not answer within 1s (hung)"


def test_missing_nvidia_smi(tmp_path):
    out = gpus.run(NodeContext(gpus=1, nvidia_smi=str(tmp_path / "absent"), timeout=5))
    assert not out.ok and out.detail == "nvidia-smi not found on this node"


def test_dirs_and_command(tmp_path):
    ok_dir = tmp_path / "ckpt"
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    ctx = NodeContext(dirs=(str(ok_dir),), min_free=1, command="echo fine", timeout=10)
    report = run_checks(ctx)
    assert report.ok and ok_dir.is_dir(), report.summary()
    huge = NodeContext(dirs=(str(ok_dir),), min_free=2**60, command="echo no IB >&2; exit 4")
    report = run_checks(huge)
    assert [o.check for o in report.failures] == ["dirs", "command"]
    assert "needed" in report.failures[0].detail
    assert report.failures[1].detail == "'echo no IB >&2; exit 4' exit code 4: no IB"
    if os.geteuid() != 0:  # root writes anywhere
        assert not run_checks(NodeContext(dirs=(str(ro / "x"),))).ok


def test_report_line_round_trip_and_module_entry(tmp_path):
    smi = fake_smi(tmp_path, "gpus_missing_one.csv", "ecc_healthy_8xh100.csv")
    env = {**os.environ, "RTOOL_NVIDIA_SMI": smi, "SLURMD_NODENAME": "n2"}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "rtool.nodes.preflight",
            "--gpus",
            "8",
            "--json",
            "--timeout",
            "10s",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert res.returncode == 1, res.stderr
    report = from_line(res.stdout.strip())
    assert report is not None and report.node == "n2" and not report.ok
    assert from_line(to_line(report)) == report
    assert json.loads(res.stdout.split(" ", 1)[1])["ok"] is False


@pytest.mark.parametrize("line", ["", "hello", "RTOOL-PREFLIGHT {", "RTOOL-PREFLIGHT []"])
def test_from_line_ignores_other_lines(line):
    assert from_line(line) is None
