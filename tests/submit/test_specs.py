"""Spec validators: what Slurm accepts passes (normalised), the rest fails with one line."""

from __future__ import annotations

import pytest

from rtool.slurm_templates import specs
from rtool.slurm_templates.batchfile import override, parse_batch_script, sbatch_option
from rtool.slurm_templates.jobs import validate_begin


@pytest.mark.parametrize(
    ("spec", "count"),
    [("1-10%1", 10), ("0-99:2%4", 50), ("1,3,5", 3), ("7", 1), ("1-3,10-20:5%2", 6)],
)
def test_array_specs_accepted(spec: str, count: int) -> None:
    assert specs.validate_array(spec) == spec
    assert specs.array_task_count(spec) == count


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("", "empty"),
        ("1-10%0", "limit"),
        ("1-10%", "limit"),
        ("10-1", "ends before"),
        ("1-10:0", "step"),
        ("a-b", "bad item"),
        ("1,,3", "bad item"),
        ("1-3; rm -rf ~", "bad item"),
    ],
)
def test_array_specs_rejected(spec: str, needle: str) -> None:
    with pytest.raises(specs.SpecError, match=needle) as exc:
        specs.validate_array(spec)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("spec", "name", "lead", "batch", "res", "norm"),
    [
        ("B:USR1@600", "USR1", 600, True, False, "B:USR1@600"),
        ("USR2@90", "USR2", 90, False, False, "USR2@90"),
        ("B:R:SIGTERM@30", "TERM", 30, True, True, "B:R:TERM@30"),
        ("R:B:10@5", "USR1", 5, True, True, "B:R:USR1@5"),
        ("B:usr1", "USR1", 60, True, False, "B:USR1@60"),
    ],
)
def test_signal_specs(spec: str, name: str, lead: int, batch: bool, res: bool, norm: str) -> None:
    sig = specs.validate_signal(spec)
    assert (sig.name, sig.lead, sig.batch, sig.reservation) == (name, lead, batch, res)
    assert sig.sbatch() == norm


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("KILL@60", "cannot forward SIGKILL .*cannot be caught"),
        ("B:STOP@60", "cannot forward SIGSTOP"),
        ("B:CONT@60", "cannot forward SIGCONT .*Slurm sends it itself"),
        ("B:CHLD@60", "cannot forward SIGCHLD"),
        ("X:USR1@60", "expected"),
        ("B:B:USR1@60", "repeated"),
        ("USR1@-5", "expected"),
        ("USR1@70000", "at most"),
        ("99@10", "no signal number"),
        ("NOPE@10", "cannot forward SIGNOPE"),
    ],
)
def test_signal_specs_rejected(spec: str, needle: str) -> None:
    with pytest.raises(specs.SpecError, match=needle):
        specs.validate_signal(spec)


@pytest.mark.parametrize(
    ("spec", "norm"),
    [
        ("20:00:00", "20:00:00"),
        ("30", "00:30:00"),
        ("90:30", "01:30:30"),
        ("2-00:00:00", "2-00:00:00"),
        ("1-12", "1-12:00:00"),
        ("20h", "20:00:00"),
        ("90m", "01:30:00"),
        ("61s", "00:02:00"),
        ("infinite", "UNLIMITED"),
    ],
)
def test_time_specs(spec: str, norm: str) -> None:
    assert specs.validate_time(spec) == norm


@pytest.mark.parametrize("spec", ["", "tomorrow", "1:2:3:4", "30s", "-5", "20:00:00; id"])
def test_time_specs_rejected(spec: str) -> None:
    with pytest.raises(specs.SpecError, match="time limit"):
        specs.validate_time(spec)


def test_names_and_lists() -> None:
    assert specs.validate_job_name("x'; rm -rf ~ #") == "x'; rm -rf ~ #"
    for bad in ("", "  ", "a\nb", "a\x00b", "x" * 201):
        with pytest.raises(specs.SpecError):
            specs.validate_job_name(bad)
    assert specs.validate_nodelist("node01,gpu[01-04,07]") == "node01,gpu[01-04,07]"
    for bad in ("node[01", "a,,b", "n1;id", "gpu[a-b]", "x y"):
        with pytest.raises(specs.SpecError, match="node list"):
            specs.validate_nodelist(bad)
    with pytest.raises(specs.SpecError, match="partition"):
        specs.validate_words("gpu;id", "partition")
    assert specs.validate_job_id("123_4") == "123_4"
    with pytest.raises(specs.SpecError, match="job id"):
        specs.validate_job_id("12 && id")
    assert validate_begin("now+60") == "now+60"
    assert validate_begin("2025-01-31T16:00:00") == "2025-01-31T16:00:00"
    with pytest.raises(specs.SpecError, match="begin"):
        validate_begin("now; id")


def test_batch_script_header_and_overrides() -> None:
    text = (
        "#!/bin/bash\n# note\n#SBATCH --time=1:00:00\n#SBATCH -J mine\n#SBATCH --mem 4G\n\n"
        "echo hi\n#SBATCH --array=1-3\n"
    )
    batch = parse_batch_script(text)
    assert batch.options == {"time": "1:00:00", "job-name": "mine", "mem": "4G"}
    assert batch.body == "echo hi\n#SBATCH --array=1-3"  # sbatch ignores lines after a command
    assert override(batch.header, {"time", "job-name"}) == [
        "# note",
        "# rtool overrides: SBATCH --time=1:00:00",
        "# rtool overrides: SBATCH -J mine",
        "#SBATCH --mem 4G",
        "",
    ]
    assert sbatch_option("#SBATCH --requeue") == ("requeue", None)
    assert sbatch_option("#SBATCH -a1-3%1") == ("array", "1-3%1")
    with pytest.raises(specs.SpecError, match="only bash or sh"):
        parse_batch_script("#!/usr/bin/env python\nprint(1)\n")
