"""The adapters in a real array job on the local Slurm: a non-finite loss under the Hugging
Face Trainer holds the array's pending tasks (nothing saved); after `scontrol release`, a
Lightning run that finishes cancels them. (One array for both: each task imports its
framework, which takes seconds; the hold and the cancel are the Guard's, shared by both.)"""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
from pathlib import Path

import pytest

from rtool.core.slurm import Slurm, SlurmError
from tests.helpers import wait_for
from tests.shim.conftest import ROOT
from tests.shim.test_frameworks import WORKERS
from tests.shim.test_slurm import _active, _wait_gone

pytestmark = pytest.mark.slurm

NAN = json.dumps([{"max_steps": 10, "nan_from": 2}])
FINISH = json.dumps([{"max_steps": 4}])


def _script(tmp: Path) -> str:
    q = shlex.quote
    return f"""#!/bin/bash
export PYTHONPATH={q(str(ROOT))} RTOOL_HEARTBEAT={q(str(tmp / "heartbeat.json"))}
export RTOOL_POLL_INTERVAL=0.05 RTOOL_DEADLINE_SIGNALS=off
out={q(str(tmp))}/task-$SLURM_ARRAY_TASK_ID; mkdir -p "$out"
if [ "$SLURM_ARRAY_TASK_ID" = 0 ]; then spec={q(NAN)} w=hf; else spec={q(FINISH)} w=lightning; fi
{q(sys.executable)} {q(str(WORKERS))}/${{w}}_worker.py "$out" "$spec"
rc=$?
echo "training exit $rc"
exit "$rc"
"""


def test_nonfinite_holds_the_array_and_finished_cancels_it(
    slurm: Slurm, job_name: str, tmp_path: Path
) -> None:
    out = tmp_path / "job-%a.out"
    job = slurm.sbatch(
        ["-J", job_name, "--array=0-3%1", "-o", str(out)], script=_script(tmp_path)
    ).job_id

    def held() -> bool:
        jobs = _active(slurm, job_name)
        return len(jobs) == 1 and jobs[0].state == "PENDING" and jobs[0].reason == "JobHeldUser"

    wait_for(held, 120, 0.5, "the pending tasks to be held")
    text = (tmp_path / "job-0.out").read_text()
    assert "training exit 86" in text and f"scontrol release {job}" in text, text[-3000:]
    [nan] = json.loads((tmp_path / "task-0" / "report-0.json").read_text())
    assert nan["exit_code"] == 86 and nan["weights_finite"] and nan["returned"]
    assert nan["checkpoints"] == []  # no checkpoint of a NaN step
    with contextlib.suppress(SlurmError):  # Slurm 22.05 answers "1_1-3: No error" (exit 1)
        slurm.scontrol("release", job)
    _wait_gone(slurm, job_name, 120, out, "the released task to finish the run")
    assert "training exit 0" in (tmp_path / "job-1.out").read_text()
    [done] = json.loads((tmp_path / "task-1" / "report-0.json").read_text())
    assert done["heartbeat"]["state"] == "finished" and done["heartbeat"]["job_id"]
    assert sorted(p.name for p in tmp_path.glob("task-*")) == ["task-0", "task-1"]
    assert Path(f"{tmp_path / 'heartbeat.json'}.done").exists()  # finished(): tasks 2-3 cancelled
