"""A run is found by its name or its jobs' name (rtool/runs/names.py): what `rtool history` and
`rtool watch run` start from, from the submission records and the `[[watch.run]]` entries."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rtool.core.state import StateDir
from rtool.runs import names, store
from rtool.runs.config import RunWatch
from rtool.runs.model import Attempt, Ledger
from tests.conftest import CliResult


def submitted(state: StateDir, run: str, job_name: str, when: float, where: Path) -> None:
    names.save(
        state,
        names.Submission(
            run=run,
            job_name=job_name,
            job_id=str(int(when)),
            workdir=str(where),
            kill_switch=f"{where}/kill-switch.{run}",
            save_switch=f"{where}/save-switch.{run}",
            heartbeat=f"{where}/ckpt/hb.json",
            log=f"{where}/{job_name}-%A_%a.out",
            submitted=when,
        ),
    )


def test_either_name_gives_the_run_its_jobs_heartbeat_and_log(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    submitted(state, "llama-7b", "train", time.time(), tmp_path)
    want = {
        "name": "llama-7b",
        "job_name": "train",
        "heartbeat": f"{tmp_path}/ckpt/hb.json",
        "log": f"{tmp_path}/train-%A_%a.out",
    }
    assert names.watch_base(state, "llama-7b", []) == want
    assert names.watch_base(state, "train", []) == want
    assert names.watch_base(state, "unknown", []) == {"name": "unknown"}
    assert RunWatch(**want).slurm_name == "train"


def test_the_newest_submission_wins_and_a_config_entry_comes_first(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    submitted(state, "a", "a", time.time() - 100, tmp_path)
    submitted(state, "b", "a", time.time(), tmp_path)  # run b's jobs are named `a` too
    assert names.watch_base(state, "a", [])["name"] == "a"  # the run of that name comes first
    assert names.watch_base(state, "b", [])["job_name"] == "a"
    submitted(state, "c", "c", time.time() - 50, tmp_path)
    submitted(state, "c", "c", time.time(), tmp_path)  # resubmitted: one record, the newest
    assert [s.run for s in names.submissions(state)].count("c") == 1
    entry = RunWatch(name="x", job_name="train", heartbeat="/mine/hb.json", crash_loop=5)
    submitted(state, "x", "train", time.time(), tmp_path)
    base = names.watch_base(state, "train", [entry])
    assert (base["name"], base["heartbeat"], base["crash_loop"]) == ("x", "/mine/hb.json", 5)
    assert base["log"] == f"{tmp_path}/train-%A_%a.out"  # what the entry leaves out


def test_history_finds_the_run_by_its_jobs_name(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    state = StateDir()  # the CLI's (XDG_STATE_HOME of the test)
    submitted(state, "llama-7b", "train", time.time(), tmp_path)
    led = Ledger(run="llama-7b", attempts=[Attempt(run="llama-7b", number=1, job_id="12_0")])
    store.save(state, led)
    for name in ("train", "llama-7b"):
        res = cli("history", name, "--stored", "--json")
        assert res.code == 0 and '"run": "llama-7b"' in res.out, res.err
    res = cli("history", "nobody", "--stored")
    assert res.code == 1 and "no attempts of run 'nobody'" in res.err
