"""The throw-away job of `rtool drill --submit`: the real submission, out of the real run's
way (pure, and the drill folder on a real filesystem)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rtool.core.errors import RtoolError
from rtool.drill.script import read_script
from rtool.drill.throwaway import drill_folder, first_tasks, shared_paths, throwaway
from rtool.slurm_templates.jobs import render_job
from rtool.slurm_templates.specs import validate_array, validate_signal
from rtool.slurm_templates.training import TrainingJob


def real(**kw: object) -> TrainingJob:
    values: dict[str, object] = dict(
        job_name="llm",
        script="/w/train.py",
        time="20:00:00",
        signal=validate_signal("B:USR1@300"),
        launcher=["torchrun", "--nproc-per-node", "8"],
        script_args=["--ckpt", "ckpt/", "--data=/data/set"],
        heartbeat="/w/hb.json",
        kill_switch="/w/kill",
        save_switch="/w/save",
        more_env=[("RTOOL_RUN", "llm-7b")],
        nodes=2,
    )
    values.update(kw)
    return TrainingJob(**values)  # type: ignore[arg-type]


def test_the_stop_path_is_kept_and_the_run_moved_into_the_folder(tmp_path: Path) -> None:
    job = throwaway(real(array="1-20%1", dependency="afterany:12"), tmp_path)
    assert job.job_name == "llm-drill" and job.array == "1-2%1" and job.dependency is None
    assert job.chdir == str(tmp_path) and job.output == str(tmp_path / "%x-%A_%a.out")
    assert job.heartbeat == str(tmp_path / "heartbeat.json")
    assert {job.kill_switch, job.save_switch} == {
        str(tmp_path / "kill-switch"),
        str(tmp_path / "save-switch"),
    }
    assert ("RTOOL_RUN", "llm-drill") in job.more_env and (
        "RTOOL_RUN",
        "llm-7b",
    ) not in job.more_env
    assert job.launcher == ["torchrun", "--nproc-per-node", "8"] and job.nodes == 2
    facts = read_script(render_job(job))
    assert facts.signal == validate_signal("B:USR1@300") and facts.launcher == "torchrun"
    assert facts.heartbeat == str(tmp_path / "heartbeat.json")


def test_auto_requeue_gets_at_least_one_requeue(tmp_path: Path) -> None:
    job = throwaway(real(auto_requeue=True, max_requeues=0), tmp_path)
    assert job.auto_requeue and job.max_requeues == 1 and read_script(render_job(job)).auto_requeue


def test_a_users_script_keeps_its_lines_but_not_name_output_or_array(tmp_path: Path) -> None:
    header = ["#SBATCH --output=logs/%j.out", "#SBATCH -J mine", "#SBATCH --qos=high"]
    job = throwaway(real(script=None, body="python t.py", header_lines=header), tmp_path)
    text = "\n".join(job.header_lines)
    assert "#SBATCH --qos=high" in job.header_lines
    assert "# rtool overrides: SBATCH --output=logs/%j.out" in text and "\n#SBATCH -J" not in text


def test_absolute_paths_in_the_arguments_are_named() -> None:
    assert shared_paths(real()) == ["/data/set"]


@given(st.integers(0, 10_000), st.integers(0, 50), st.integers(1, 5), st.integers(1, 9))
def test_the_first_two_tasks_of_any_array(first: int, extra: int, step: int, limit: int) -> None:
    spec = (
        f"{first}-{first + extra * step}:{step}%{limit}"
        if step > 1
        else f"{first}-{first + extra}%{limit}"
    )
    cut = first_tasks(validate_array(spec))
    assert validate_array(cut) == cut and cut.endswith("%1") and cut.startswith(f"{first}-")


def test_the_drill_folder_is_new_private_and_never_through_a_symlink(tmp_path: Path) -> None:
    one, two = drill_folder(tmp_path / "d", "llm"), drill_folder(tmp_path / "d", "llm")
    assert one != two and one.parent == tmp_path / "d"
    assert oct(one.stat().st_mode & 0o777) == "0o700"
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "link")
    with pytest.raises(RtoolError, match="symlink"):
        drill_folder(tmp_path / "link", "llm")
