"""`rtool nodes`, `rtool nodes forget`, `rtool preflight --here`, and the rendered pre-flight."""

from __future__ import annotations

import json
import subprocess
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
