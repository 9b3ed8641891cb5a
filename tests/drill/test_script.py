"""What a job's batch script says about its stop path: read from scripts rendered by the real
templates and from hand-written ones (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rtool.drill.script import DEADLINE_WINDOW, exports, header_lines, read_script
from rtool.slurm_templates.jobs import render_job
from rtool.slurm_templates.specs import validate_signal
from rtool.slurm_templates.training import TrainingJob


def rendered(**kw: object) -> str:
    job = TrainingJob(job_name="train", script="/w/train.py", time="20:00:00", **kw)  # type: ignore[arg-type]
    return render_job(job)


def test_a_rendered_array_script_says_its_signal_heartbeat_and_no_auto_requeue() -> None:
    text = rendered(
        array="0-9%1", signal=validate_signal("B:USR1@120"), heartbeat="/w/run dir/hb.json"
    )
    f = read_script(text)
    assert f.signal is not None and f.signal.sbatch() == "B:USR1@120"
    assert f.heartbeat == "/w/run dir/hb.json" and f.records is None
    assert not f.auto_requeue and f.requeue_exit_code == 85
    assert f.rtool_template and f.uses_srun and f.launcher is None
    assert f.deadline_signals == ("USR1",) and f.deadline_window == DEADLINE_WINDOW


def test_auto_requeue_its_bound_and_the_launcher_are_read() -> None:
    text = rendered(
        signal=validate_signal("USR2@60"),
        auto_requeue=True,
        max_requeues=5,
        launcher=["torchrun", "--nproc-per-node", "8"],
        heartbeat="/w/hb.json",
        more_env=[("RTOOL_DEADLINE_WINDOW", "5m"), ("RTOOL_DEADLINE_SIGNALS", "off")],
    )
    f = read_script(text)
    assert f.signal is not None and f.signal.batch and f.signal.name == "USR2"  # sent as B:
    assert f.auto_requeue and f.max_requeues == 5
    assert f.launcher == "torchrun"
    assert f.deadline_window == 300.0 and f.deadline_signals == ()
    assert not f.is_deadline("USR1")


def test_a_hand_written_script_the_last_header_signal_wins_body_lines_do_not_count() -> None:
    text = (
        "#!/bin/bash\n#SBATCH --signal=B:USR1@60\n#SBATCH --signal=B:USR2@90\n"
        "#SBATCH --time=1:00:00\n\npython train.py\n#SBATCH --signal=TERM@5\n"
    )
    f = read_script(text)
    assert f.signal is not None and f.signal.sbatch() == "B:USR2@90"
    assert not f.rtool_template and f.heartbeat is None and not f.uses_srun


def test_no_signal_and_a_bad_one_are_told_apart() -> None:
    assert read_script("#!/bin/bash\npython t.py\n").signal is None
    bad = read_script("#!/bin/bash\n#SBATCH --signal=B:KILL@60\npython t.py\n")
    assert bad.signal is None and bad.signal_error and "KILL" in bad.signal_error


def test_exports_take_rtool_variables_only_and_no_expansions() -> None:
    env = exports(
        "export RTOOL_HEARTBEAT='/a b/hb.json' PATH=/x\nexport RTOOL_RUN=\"$X\"\n"
        "  export RTOOL_AUTO_REQUEUE=1 RTOOL_MAX_REQUEUES=3 # comment\nexport RTOOL_BAD='\n"
    )
    assert env == {
        "RTOOL_HEARTBEAT": "/a b/hb.json",
        "RTOOL_AUTO_REQUEUE": "1",
        "RTOOL_MAX_REQUEUES": "3",
    }


def test_the_header_ends_at_the_first_command() -> None:
    assert header_lines("#!/bin/sh\n#SBATCH -t 5\n\n# c\necho hi\n#SBATCH -N 2\n") == [
        "#SBATCH -t 5",
        "",
        "# c",
    ]


@given(st.text(max_size=400))
def test_any_text_is_read_without_an_error(text: str) -> None:
    f = read_script(text)
    assert f.requeue_exit_code >= 0 and f.deadline_window > 0
