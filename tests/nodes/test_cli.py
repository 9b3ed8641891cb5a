"""`rtool nodes`, `rtool nodes forget`, `rtool preflight --here`, and the rendered pre-flight."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from rtool.core.state import StateDir, default_state_dir
from rtool.nodes.store import Evidence, EvidenceKind, SuspectStore


def test_nodes_list_forget_and_bad_input(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli("nodes", "--no-refresh").out == "no suspect nodes\n"
    store = SuspectStore(StateDir(default_state_dir()))
    drain = Evidence(EvidenceKind.DRAIN, "drained: GPU 3 ECC errors", time.time(), "llama", "4_2")
    store.record("gpu7", drain)
    data = json.loads(cli("nodes", "--json", "--no-refresh").out)
    assert data["suspects"][0]["node"] == "gpu7" and data["suspects"][0]["runs"] == ["llama"]
    assert "drain job 4_2: drained: GPU 3 ECC errors" in cli("nodes", "--no-refresh").out
    bad = cli("nodes", "forget", "-rf")
    assert bad.code == 2 and bad.err.startswith("rtool:")
    assert cli("nodes", "forget", "gpu7").out == "gpu7 is no longer suspect\n"


def test_preflight_here_and_rendered_script(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("rtool.toml").write_text(f'[nodes.preflight]\ndirs = ["{tmp_path / "ckpt"}"]\n')
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    r = cli("preflight")
    assert r.code == 0 and r.out.startswith("pre-flight OK - "), r.out
    monkeypatch.setenv("RTOOL_NVIDIA_SMI", str(tmp_path / "absent"))
    r = cli("preflight", "--gpus", "8", "--here")
    assert r.code == 1 and "FAIL gpus: nvidia-smi not found on this node" in r.out
    Path("train.py").write_text("print('hi')\n")
    script = cli("submit", "train.py", "--gpus-per-node", "4", "--dry-run").out
    assert "preflight --gpus 4 || _rtool_pf=$?" in script
    assert "--config " + str(tmp_path / "rtool.toml") in script
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    off = cli("submit", "train.py", "--gpus-per-node", "4", "--no-preflight", "--dry-run").out
    assert "_rtool_pf" not in off


def test_preflight_options_are_the_checks_keys(cli, tmp_path, monkeypatch):
    """Each check's keys are `rtool preflight` options over the config's values; a bad one is
    a usage error naming the option, on the job side and on the node side."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    Path("rtool.toml").write_text('[nodes.preflight]\nmin_free = "1000PiB"\n')
    r = cli("preflight", "--dir", str(tmp_path / "ckpt"))
    assert r.code == 1 and "FAIL dirs: " in r.out and "needed" in r.out, r.out
    r = cli("preflight", "--dir", str(tmp_path / "ckpt"), "--min-free", "1KiB")
    assert r.code == 0 and "ok   dirs: 1 folder(s) writable" in r.out, r.out
    r = cli("preflight", "--min-free", "lots")
    assert r.code == 2 and r.err.startswith("rtool: --min-free: not a size: 'lots'")
    node = subprocess.run(
        [sys.executable, "-m", "rtool.nodes.preflight", "--min-free", "lots"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert node.returncode == 2 and "min_free: " in node.stderr
