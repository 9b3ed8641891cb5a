"""Rendered scripts against golden files, template overrides, and the renderer's guards.

Regenerate the golden files after an intended template change with:
    RTOOL_UPDATE_GOLDEN=1 pytest tests/submit
and review the diff (`git diff tests/submit/golden`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rtool.slurm_templates.config import SubmitConfig, SwitchesConfig
from rtool.slurm_templates.jobs import (
    CronSchedulerJob,
    WatchdogJob,
    render_cron_scheduler,
    render_job,
)
from rtool.slurm_templates.renderer import TemplateError, render
from rtool.slurm_templates.specs import validate_signal
from rtool.slurm_templates.submit import SubmitRequest, build_job
from rtool.slurm_templates.training import TrainingJob

GOLDEN = Path(__file__).parent / "golden"
#: Read at import: the autouse fixture clears RTOOL_* variables before each test.
UPDATE = os.environ.get("RTOOL_UPDATE_GOLDEN") == "1"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run RTOOL_UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text(), f"{name} differs; RTOOL_UPDATE_GOLDEN=1 to accept"
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0


def training(**kw: object) -> TrainingJob:
    base: dict[str, object] = {
        "job_name": "llama",
        "script": "/runs/train.py",
        "kill_switch": "/runs/kill-switch",
        "save_switch": "/runs/save-switch",
        "rtool": ["/opt/rtool/bin/rtool"],  # the same script on every machine
    }
    return TrainingJob(**{**base, **kw})  # type: ignore[arg-type]


def test_golden_training_array() -> None:
    job = training(
        array="1-10%1",
        time="20:00:00",
        signal=validate_signal("B:USR1@600"),
        partition="gpu",
        account="proj",
        nodes=2,
        gpus_per_node=8,
        exclude="node[01-03]",
        output="%x-%A_%a.out",
        requeue=True,
        launcher=["torchrun", "--nproc-per-node", "8"],
        script_args=["--lr", "3e-4", "--name", "run 1"],
        extra_sbatch=["#SBATCH --qos=high"],
        setup_lines=["module load cuda/12.4"],
        heartbeat="/runs/heartbeat",
    )
    check_golden("training_array.slurm", render_job(job))


def test_golden_training_auto_requeue() -> None:
    job = training(
        time="02:00:00",
        signal=validate_signal("B:USR2@300"),
        auto_requeue=True,
        max_requeues=5,
        dependency="afterany:1234",
    )
    text = render_job(job)
    assert "#SBATCH --requeue" in text and "#SBATCH --open-mode=append" in text
    assert "export RTOOL_AUTO_REQUEUE=1 RTOOL_MAX_REQUEUES=5" in text
    check_golden("training_auto_requeue.slurm", text)


def test_golden_wrapped_batch_script(tmp_path: Path) -> None:
    (tmp_path / "job.slurm").write_text(
        "#!/bin/bash\n#SBATCH --time=1:00:00\n#SBATCH -J mine\n#SBATCH --mem=4G\n\n"
        'set -e\nfor i in 1 2; do\n  srun python train.py --seed "$i"\ndone\n'
    )
    req = SubmitRequest(script=Path("job.slurm"), time="30", array="1-3%1")
    job = build_job(req, SubmitConfig(partition="cpu"), SwitchesConfig(), tmp_path)
    job.rtool = ["/opt/rtool/bin/rtool"]
    text = render_job(job).replace(str(tmp_path), "/RUN")
    assert "#SBATCH --mem=4G" in text  # the user's own lines stay
    assert "# rtool overrides: SBATCH --time=1:00:00" in text
    assert "#SBATCH --job-name=mine" in text and "#SBATCH --partition=cpu" in text
    check_golden("wrapped_batch.slurm", text)


def test_golden_cron_and_watchdog() -> None:
    cron = CronSchedulerJob(
        job_name="rtool-cron",
        command=["/home/u/venv/bin/rtool", "cron", "tick", "--dir", "/home/u/c r"],
        begin="2025-01-31T16:00:00",
        time="00:10:00",
        output="/home/u/cron/logs/scheduler.%j.log",
    )
    check_golden("cron_scheduler.slurm", render_job(cron))
    assert render_cron_scheduler(cron.command, "rtool-cron", **_cron_opts()) == render_job(cron)
    watch = WatchdogJob(job_name="watch", command="rtool watch all", interval=600, time="1-00:00")
    check_golden("watchdog.slurm", render_job(watch))


def _cron_opts() -> dict[str, str]:
    return {
        "begin": "2025-01-31T16:00:00",
        "time": "00:10:00",
        "output": "/home/u/cron/logs/scheduler.%j.log",
    }


def test_defaults_from_config_and_precedence(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("print(1)\n")
    cfg = SubmitConfig(
        partition="gpu", time="10h", array="1-4%1", launcher="torchrun --nproc-per-node 2"
    )
    job = build_job(SubmitRequest(script=Path("t.py"), time="1h"), cfg, SwitchesConfig(), tmp_path)
    assert (job.partition, job.time, job.array, job.job_name) == ("gpu", "01:00:00", "1-4%1", "t")
    assert job.signal is not None and job.signal.sbatch() == "B:USR1@600"
    assert job.kill_switch == str(tmp_path / "kill-switch.t")
    text = render_job(job)
    assert "exec torchrun --nproc-per-node 2 --nnodes " in text
    assert "bash -c '_rtool_launch \"$@\"' rtool-launch " + str(tmp_path / "t.py") in text
    sw = SwitchesConfig(kill="~/k", save="/abs/s")
    job = build_job(SubmitRequest(script=Path("t.py")), cfg, sw, tmp_path)
    assert job.kill_switch == str(Path("~/k").expanduser()) and job.save_switch == "/abs/s"


def test_user_template_overrides_by_name(tmp_path: Path) -> None:
    (tmp_path / "cron_scheduler.slurm.j2").write_text(
        '#!/bin/bash\n{% include "_sbatch_header.j2" %}\n# site-specific\n{{ job.command | q }}\n'
    )
    text = render_job(CronSchedulerJob(job_name="c", command=["a b"]), [str(tmp_path)])
    assert "# site-specific\n'a b'\n" in text
    assert "#SBATCH --job-name=c" in text


def test_unquoted_value_or_missing_value_fails(tmp_path: Path) -> None:
    (tmp_path / "bad.j2").write_text("echo {{ name }}\n")
    with pytest.raises(TemplateError, match="without a quoting filter"):
        render("bad.j2", [str(tmp_path)], name="x; id")
    assert render("bad.j2", [str(tmp_path)], name=3) == "echo 3\n"
    (tmp_path / "missing.j2").write_text("echo {{ nope | q }}\n")
    with pytest.raises(TemplateError, match="nope"):
        render("missing.j2", [str(tmp_path)])
    with pytest.raises(TemplateError, match="not found"):
        render("nothing-here.j2", [str(tmp_path)])


def test_requeue_exit_code_matches_the_shim() -> None:
    shim = pytest.importorskip("rtool.shim")
    from rtool.slurm_templates.training import REQUEUE_EXIT_CODE

    assert shim.REQUEUE_EXIT_CODE == REQUEUE_EXIT_CODE
    job = training(exit_before_end="10m")
    assert "export RTOOL_EXIT_BEFORE_END=10m" in render_job(job)
    with pytest.raises(Exception, match="exit-before-end"):
        training(exit_before_end="soon")
