"""The root cause across ranks on the local 3-node cluster (issue 37): a 2-node training (the
toy DDP of test_multinode.py, srun-native with `--label`, one rank per node) whose rank 1
raises is recorded with rank 1's exception and node, not rank 0's "Connection closed by peer";
a hang on rank 0 is blamed on rank 0 whichever rank's shim fired first; a collective timeout
printed by the rank left waiting makes no node suspect."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rtool.core.slurm import Slurm
from rtool.core.state import StateDir
from rtool.nodes.store import SuspectStore
from rtool.runs.model import Attempt
from rtool.watchdogs.jobnodes import record_signatures
from tests.e2e.conftest import RtoolRun
from tests.e2e.test_multinode import DDP, read
from tests.helpers import wait_for
from tests.shim.test_slurm import _active

LAUNCHER = "srun --label --ntasks-per-node 1"


def _run(
    tmp_path: Path, rtool: RtoolRun, slurm: Slurm, job_name: str, fault: str
) -> dict[str, Any]:
    """Submit the 2-node toy, make `fault` (crash-1, hang-0) happen after 20 steps, wait for
    the end; the attempt as `rtool history --json` records it."""
    (tmp_path / "rtool.toml").write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')
    run = tmp_path / "run"
    run.mkdir()
    env = {"DDP_DIR": str(run), "DDP_STEPS": "400", "DDP_STEP_SECONDS": "0.05",
           "DDP_CKPT_EVERY": "20", "OMP_NUM_THREADS": "1"}  # fmt: skip
    rtool(
        *("submit", str(DDP), "--job-name", job_name, "--nodes", "2", "--launcher", LAUNCHER),
        *("--time", "0:04:00", "--hang-after", "4s", "--heartbeat", str(run / "hb.json")),
        *("--restarts-in-place", "0"),  # the attempt ends with the failure
        *("--exit-before-end", "off", "--parsable", "--python", sys.executable),
        env=env,
    )
    wait_for(lambda: len(read(run / "steps-1.log")) >= 20, 150, 0.2, "20 steps")
    (run / fault).touch()
    wait_for(lambda: not _active(slurm, job_name), 180, 1, "the job to end")
    log = str(tmp_path / f"{job_name}-%j.out")
    res = rtool("history", job_name, "--json", "--log", log, "--heartbeat", str(run / "hb.json"))
    (attempt,) = json.loads(res.stdout)["ledger"]["attempts"]
    attempt["rank_nodes"] = {r: read(run / f"steps-{r}.log")[-1].node for r in (0, 1)}
    return attempt  # type: ignore[no-any-return]


@pytest.mark.slurm
@pytest.mark.timeout(360)
def test_the_rank_that_raised_is_the_cause_with_its_node(
    tmp_path: Path, rtool: RtoolRun, slurm: Slurm, job_name: str
) -> None:
    a = _run(tmp_path, rtool, slurm, job_name, "crash-1")
    sig = a["signature"]
    assert sig["name"] == "python-exception" and sig["label"] == "RuntimeError", a
    assert "crashed on demand" in sig["line"], sig
    assert sig["rank"] == 1 and sig["node"] == a["rank_nodes"][1], (sig, a["rank_nodes"])
    assert len(a["nodes"]) == 2


@pytest.mark.slurm
@pytest.mark.timeout(360)
def test_a_hang_is_blamed_on_the_hung_rank(
    tmp_path: Path, rtool: RtoolRun, slurm: Slurm, job_name: str
) -> None:
    a = _run(tmp_path, rtool, slurm, job_name, "hang-0")
    sig = a["signature"]
    assert sig["name"] == "hang", a
    assert sig["rank"] == 0 and sig["node"] == a["rank_nodes"][0], (sig, a["rank_nodes"])


def test_a_timeout_printed_by_the_waiting_rank_makes_no_node_suspect(tmp_path: Path) -> None:
    """The ledger's signing and the suspect store, as `rtool watch` runs them, on a 2-node
    attempt whose log has the waiting rank's collective timeout (a real line) after the
    other rank's death."""
    from rtool.runs import ledger

    line = (
        "1: [rank1]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog "
        "caught collective operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, "
        "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600061 milliseconds before timing "
        "out. (n2)"
    )
    now = time.time()
    a = Attempt(run="r", number=1, job_id="7", nodes=("n1", "n2"), state="FAILED", ended=now)
    (signed,) = ledger._signatures([a.with_(log_tail=("0: step 5", line))], None, ())
    assert signed.signature is not None and signed.signature.name == "nccl-timeout"
    store = SuspectStore(StateDir(tmp_path / "state"))
    store.record_many(record_signatures([signed]))
    assert store.suspects() == []
