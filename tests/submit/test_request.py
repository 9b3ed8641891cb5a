"""Submit's fields are declared once (rtool/slurm_templates/request.py): the CLI, the
`#SBATCH` lines, the shim variables and the overridden lines of a user's script all come from
the declaration."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from rtool.slurm_templates.config import SubmitConfig, SwitchesConfig
from rtool.slurm_templates.jobs import render_job
from rtool.slurm_templates.request import SubmitRequest, Use, declared, option
from rtool.slurm_templates.specs import SpecError, validate_words
from rtool.slurm_templates.submit import build_job
from tests.conftest import CliResult

Cli = Callable[..., CliResult]


@dataclasses.dataclass
class Extended(SubmitRequest):
    """What another issue adds: one declaration per field, nothing else."""

    constraint: str | None = option(
        "--constraint",
        help="Node features.",
        sbatch="constraint",
        use=Use.SBATCH,
        check=lambda v: validate_words(v, "constraint"),
    )
    run: str | None = option("--run", help="Run name.", env="RTOOL_RUN", use=Use.ENV)
    exclusive: bool = option("--exclusive", help="Whole nodes.", sbatch="exclusive", use=Use.SBATCH)


def test_every_declared_option_is_on_the_command_line(cli: Cli) -> None:
    res = cli("submit", "--help")
    assert res.code == 0
    for _, opt in declared():
        for flag in opt.flags:
            assert flag.split("/")[0] in res.out


def test_a_new_declaration_reaches_the_script(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("print(1)\n")
    req = Extended(script=Path("t.py"), constraint="a100", run="llama-7b", exclusive=True)
    job = build_job(req, SubmitConfig(), SwitchesConfig(), tmp_path)
    text = render_job(job)
    assert "#SBATCH --constraint=a100\n#SBATCH --exclusive\n" in text
    assert "export RTOOL_RUN=llama-7b\n" in text
    with pytest.raises(SpecError, match="constraint"):
        build_job(
            Extended(script=Path("t.py"), constraint="a;b"),
            SubmitConfig(),
            SwitchesConfig(),
            tmp_path,
        )


def test_a_declared_sbatch_option_overrides_the_users_line(tmp_path: Path) -> None:
    (tmp_path / "job.slurm").write_text("#!/bin/bash\n#SBATCH --constraint=v100\nsrun true\n")
    kept = build_job(Extended(script=Path("job.slurm")), SubmitConfig(), SwitchesConfig(), tmp_path)
    assert ("constraint", "v100") in kept.more_sbatch  # the script's own value, re-emitted once
    req = Extended(script=Path("job.slurm"), constraint="a100")
    text = render_job(build_job(req, SubmitConfig(), SwitchesConfig(), tmp_path))
    assert "# rtool overrides: SBATCH --constraint=v100" in text
    assert "#SBATCH --constraint=a100" in text


def test_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="env=RTOOL_NAME"):
        option("--x", help="x", env="PATH", use=Use.ENV)
    with pytest.raises(ValueError, match="sbatch=NAME"):
        option("--x", help="x", use=Use.SBATCH)


def test_every_config_key_of_a_declaration_exists() -> None:
    keys = set(SubmitConfig.model_fields)
    missing = [f.name for f, opt in declared() if opt.config and opt.config not in keys]
    assert not missing, f"declared config= keys absent from SubmitConfig: {missing}"
