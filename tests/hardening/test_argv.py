"""Item 2 of issue 16: nothing read from a file reaches a Slurm command's argv unvalidated.

The validators are checked on generated values; the Slurm layer refuses bad values itself (no
process is started); and end to end, a heartbeat whose job id is `--state=RUNNING` does not turn
a hang action into `scancel --signal=USR1 --full --state=RUNNING` (every running job of the
user): a real running job that traps USR1 is left alone.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rtool.core import validate
from rtool.core.slurm import Slurm
from tests.hardening.conftest import no_traceback
from tests.helpers import wait_for

OPTIONISH = st.text(min_size=1, max_size=30).map(lambda s: "-" + s)


@given(st.integers(min_value=1, max_value=10**11), st.integers(min_value=0, max_value=10**6))
def test_job_ids_and_array_tasks_pass(job: int, task: int) -> None:
    assert validate.job_id(str(job)) == str(job)
    assert validate.job_id(f"{job}_{task}") == f"{job}_{task}"
    assert validate.array_task_id(str(task)) == str(task)


@given(
    st.one_of(
        OPTIONISH,
        st.text().filter(lambda s: not s.strip().isascii() or not s.strip().isdigit()),
        st.sampled_from(["--state=RUNNING", "-u", "1 2", "1;2", "１２３", "0", "12_", "_3", ""]),
    )
)
def test_anything_else_is_not_a_job_id(value: str) -> None:
    text = value.strip()
    if text.isascii() and text.isdigit() and not text.startswith("0"):
        return  # a genuine id
    with pytest.raises(validate.ArgvError):
        validate.job_id(value)


@given(OPTIONISH)
def test_names_users_nodes_signals_never_start_with_a_dash(value: str) -> None:
    for check in (
        validate.name,
        validate.user,
        validate.node,
        validate.signal_name,
        validate.states,
        validate.word,
        validate.path_arg,
    ):
        with pytest.raises(validate.ArgvError):
            check(value)


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_validators_raise_only_argv_error(value: str) -> None:
    for check in (validate.job_id, validate.name, validate.user, validate.signal_name):
        try:
            out = check(value)
        except validate.ArgvError as exc:
            assert str(exc)
        else:
            assert not out.startswith("-") and "\n" not in out


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda s: s.scancel(["--state=RUNNING"], signal="USR1", full=True), "job id"),
        (lambda s: s.scancel([], signal="USR1"), "refusing to guess"),
        (lambda s: s.scancel(["12"], signal="--full"), "signal"),
        (lambda s: s.requeue("-1"), "job id"),
        (lambda s: s.hold("1 2"), "job id"),
        (lambda s: s.show_job("--all"), "job id"),
        (lambda s: s.squeue(names=["-x"]), "starts with '-'"),
        (lambda s: s.squeue(names=["a,b"]), "comma"),
        (lambda s: s.squeue(user="--all"), "user"),
        (lambda s: s.scancel(name="--me"), "starts with '-'"),
        (lambda s: s.scontrol("requeue", "--all"), "job id"),
    ],
)
def test_the_slurm_layer_refuses_before_running_anything(call: Any, needle: str) -> None:
    s = Slurm(timeout=5)
    with pytest.raises(validate.ArgvError, match=needle):
        call(s)
    assert s.calls == []  # nothing was run


@pytest.mark.slurm
def test_heartbeat_job_id_state_running_never_reaches_scancel(
    cli: Any, slurm: Slurm, job_name: str, tmp_path: Path
) -> None:
    got = tmp_path / "got-usr1"
    script = (
        f"#!/bin/bash\n#SBATCH --job-name={job_name}\n#SBATCH --time=5\n"
        f"trap 'echo USR1 >> {got}' USR1\nfor i in $(seq 600); do sleep 0.2; done\n"
    )
    job = slurm.sbatch(script=script, cwd=str(tmp_path)).job_id
    wait_for(
        lambda: any(j.state == "RUNNING" for j in slurm.squeue(job_ids=[job])),
        timeout=90,
        what="the job to run",
    )
    log = tmp_path / "train.log"
    log.write_text("step 1\n")
    old = time.time() - 3600
    os.utime(log, (old, old))
    hb = tmp_path / "hb.json"
    hb.write_text(json.dumps({"state": "running", "time": old, "job_id": "--state=RUNNING"}))
    res = cli(
        "watch", "log", str(log), "--heartbeat", str(hb), "--stale", "1m",
        "--on-hang", "signal:USR1", "--no-notify", "--json",
    )  # fmt: skip
    no_traceback(res.err)
    assert res.code == 2, res.out + res.err
    result = json.loads(res.out)["results"][0]
    assert (
        "refused" in result["fields"]["action"] and "--state=RUNNING" in result["fields"]["action"]
    )
    time.sleep(2)
    assert not got.exists()  # the running job got no USR1
    assert any(j.state == "RUNNING" for j in slurm.squeue(job_ids=[job]))


def test_cron_state_job_ids_that_are_not_job_ids_are_dropped(tmp_path: Path) -> None:
    from rtool.core.state import StateDir
    from rtool.cron.store import CronStore

    store = CronStore(StateDir(tmp_path / "state"), tmp_path / "cron")
    forged = {"--state=RUNNING": {"name": "x"}, "123": {"start": "soon"}, "124": "junk"}
    store.save({"slurm_jobs": forged})
    assert store.load()["slurm_jobs"] == {"123": {"start": 0.0}}
