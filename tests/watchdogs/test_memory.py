"""memory watchdog: node thresholds and the RSS trend of a real child that allocates steadily."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from rtool.core.alert import Status
from rtool.core.state import StateDir
from rtool.watchdogs.base import ProbeEnv
from rtool.watchdogs.config import MemoryWatch
from rtool.watchdogs.memory import MemoryWatchdog

GROWER = """
import sys, time
chunks = []
sys.stdout.write("ready\\n"); sys.stdout.flush()
while True:
    chunks.append(bytearray(8 * 1024 * 1024))  # 8 MiB, touched
    time.sleep(0.1)
"""


def test_node_thresholds(cli):
    r = cli("watch", "memory", "--no-notify")
    assert r.code == 0 and r.out.startswith("MEMORY OK - node ")
    r = cli("watch", "memory", "--max-used", "0%", "--warn-used", "0%", "--no-notify")
    assert r.code == 2 and "(limit 0%)" in r.out


def test_steady_allocation_warns_with_growth_and_time_to_full(tmp_path: Path):
    child = subprocess.Popen([sys.executable, "-c", GROWER], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        state = StateDir(tmp_path / "state")
        # a runway of a year: any steady growth fills the node within it
        spec = MemoryWatch(pids=[child.pid], trend_min_span="1s", runway="365d")
        wd = MemoryWatchdog([spec], 5.0)
        for _ in range(4):
            node, proc = wd.check(wd.probe(ProbeEnv(None, state)), time.time())
            time.sleep(0.5)
        assert node.status == Status.OK
        assert proc.key == f"memory:pid:{child.pid}"
        assert proc.status == Status.WARNING, proc.summary
        assert "MiB/h" in proc.summary and "h until the node is full" in proc.summary
        # a quiet process gives no warning
        sleeper = subprocess.Popen(["sleep", "60"])
        spec = MemoryWatch(pids=[sleeper.pid], trend_min_span="1s", runway="365d")
        quiet = MemoryWatchdog([spec], 5.0)
        for _ in range(3):
            _, res = quiet.check(quiet.probe(ProbeEnv(None, state)), time.time())
            time.sleep(0.2)
        sleeper.kill()
        sleeper.wait()
        assert res.status == Status.OK, res.summary
    finally:
        child.kill()
        child.wait()


def test_gone_pid_is_unknown_and_no_gpu_is_no_error(cli):
    r = cli("watch", "memory", "--pid", "999999999", "--gpu", "--no-notify")
    assert r.code == 3
    assert "MEMORY UNKNOWN - pid:999999999: pid 999999999 is not running" in r.out
    assert "gpu" not in r.out  # no nvidia-smi here: no GPU check, no error


def test_gpu_memory_is_read_through_the_one_nvidia_smi_reader(cli, tmp_path, monkeypatch):
    """The memory watchdog asks nvidia-smi through rtool.core.gpu, like the pre-flight does
    (a stand-in answering in nvidia-smi's csv,noheader,nounits format)."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        '#!/bin/bash\ncase "$*" in\n'
        '  *memory.used*nounits*) printf "0, 80000, 81559\\n1, 1000, 81559\\n" ;;\n'
        "  *) exit 9 ;;\nesac\n"
    )
    smi.chmod(0o755)
    monkeypatch.setenv("RTOOL_NVIDIA_SMI", str(smi))
    r = cli("watch", "memory", "--gpu", "--max-used", "100%", "--warn-used", "100%", "--no-notify")
    assert "MEMORY CRITICAL - gpu0 98% memory used (80000 of 81559 MiB) (limit 95%)" in r.out
    assert "MEMORY OK - gpu1 1% memory used" in r.out and r.code == 2
    smi.write_text("#!/bin/bash\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    r = cli("watch", "memory", "--gpu", "--max-used", "100%", "--warn-used", "100%", "--no-notify")
    assert "MEMORY UNKNOWN - gpu: nvidia-smi exit code 9: NVIDIA-SMI has failed" in r.out
