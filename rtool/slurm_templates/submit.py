"""What `rtool submit` submits: the request, merged with the config and the user's own batch
script, becomes a validated `TrainingJob` (pure: reads the script file, runs no command).

Precedence: command line > the script's own `#SBATCH` lines > the `[submit]` config.
"""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Any

from rtool.core.safeio import UnsafeFileError, read_bounded
from rtool.runs.names import file_part
from rtool.slurm_templates import specs
from rtool.slurm_templates.batchfile import BatchScript, override, parse_batch_script
from rtool.slurm_templates.config import SubmitConfig, SwitchesConfig
from rtool.slurm_templates.request import (
    SubmitRequest,
    Use,
    declared,
    empty_options,
    overridden_sbatch,
)
from rtool.slurm_templates.training import TrainingJob

#: A training or batch script larger than this is not a script.
MAX_SCRIPT = 4 * 1024 * 1024

BATCH_SUFFIXES = (".slurm", ".sbatch", ".sh", ".bash")


def switch_path(given: str | None, configured: str | None, which: str, run: str, cwd: Path) -> str:
    """An absolute switch path: the option, else the config, else `<which>-switch.<run>` in
    `cwd` (`which`: kill or save). `{run}` in a given or configured path names the run."""
    raw = given or configured or f"{which}-switch.{{run}}"
    return _abs(raw.replace("{run}", file_part(run)), cwd)


def is_batch_script(path: Path, text: str) -> bool:
    """A Python training script, or an existing sbatch script?"""
    if path.suffix == ".py":
        return False
    if path.suffix in BATCH_SUFFIXES:
        return True
    first = text.splitlines()[0] if text else ""
    if first.startswith("#!") and "python" in first:
        return False
    if first.startswith("#!") or "#SBATCH" in text:
        return True
    raise specs.SpecError(
        f"{path}: neither a Python script (.py) nor a batch script (.slurm, .sbatch, .sh)"
    )


def _check_request(req: SubmitRequest) -> None:
    """Refuse an option given empty and an sbatch argument that is no plain text."""
    empty = empty_options(req)
    if empty:
        raise specs.SpecError(f"{', '.join(empty)}: empty value (leave it out for the default)")
    for arg in req.extra_args:
        specs.check_text(arg, "sbatch argument")


def build_job(req: SubmitRequest, cfg: SubmitConfig, sw: SwitchesConfig, cwd: Path) -> TrainingJob:
    """The validated job for a request (raises SpecError with one line)."""
    _check_request(req)
    path, batch = _read_script(req.script, cwd)
    own = batch.options if batch else {}

    def pick(cli: str | None, name: str, config: str | None = None) -> str | None:
        return cli or own.get(name) or config

    array = pick(req.array, "array", cfg.array)
    time = pick(req.time, "time", cfg.time)
    explicit = req.signal or own.get("signal") or ("signal" in cfg.model_fields_set)
    signal = pick(req.signal, "signal", cfg.signal)
    spec, notes = _signal(signal, time, bool(explicit))
    more_sbatch, more_env = _declared_extras(req, own, cfg)
    sbatch_lines, setup_lines = _split_extra(cfg.extra_lines)
    # The run and its jobs' name agree unless both are given: --run names the jobs too.
    job_name = specs.validate_run_job_name(pick(req.job_name, "job-name") or req.run or path.stem)
    run = dict(more_env).get("RTOOL_RUN") or job_name
    job = TrainingJob(
        job_name=job_name,
        time=time,
        partition=pick(req.partition, "partition", cfg.partition),
        account=pick(req.account, "account", cfg.account),
        output=None if "output" in own else _output(job_name, array),
        # every submission of the run appends to its log: a requeue (away from a bad node, a
        # time limit) never wipes the attempt before it (Slurm's default truncates)
        open_mode=None if "open-mode" in own else "append",
        extra_sbatch=sbatch_lines,
        setup_lines=setup_lines,
        kill_switch=switch_path(req.kill_switch, sw.kill, "kill", run, cwd),
        save_switch=switch_path(req.save_switch, sw.save, "save", run, cwd),
        **_program(req, cfg, path, batch, more_sbatch),
        array=array,
        signal=spec,
        notes=notes,
        requeue=_requeue(req.requeue, own, cfg),
        dependency=f"afterany:{specs.validate_job_id(req.after)}" if req.after else None,
        **_counts(req, cfg),
        heartbeat=_abs(req.heartbeat, cwd) if req.heartbeat else None,
        more_sbatch=more_sbatch,
        more_env=more_env,
        **{f.name: getattr(req, f.name) for f, opt in declared(type(req)) if opt.use is Use.JOB},
    )
    if job.exit_before_end is None:  # the learned pre-deadline stop, unless turned off
        job.exit_before_end = "auto"
    if cfg.rtool:  # rtool's own path as the compute nodes see it (docs/install.md)
        job.rtool = [cfg.rtool]
    return job


def _program(
    req: SubmitRequest,
    cfg: SubmitConfig,
    path: Path,
    batch: BatchScript | None,
    more_sbatch: list[tuple[str, str | None]],
) -> dict[str, Any]:
    """What the job runs: a batch script's body (its header with the lines of rtool's own
    options commented out), or a Python script under a launcher."""
    own = {*overridden_sbatch(req), *dict(more_sbatch)}
    return {
        "header_lines": override(batch.header, own) if batch else [],
        "script": None if batch else str(path),
        "python": req.python or cfg.python,
        "launcher": _words(req.launcher or cfg.launcher or "", "launcher"),
        "script_args": _words(req.script_args or "", "script arguments"),
        "body": batch.body if batch else None,
    }


def _read_script(script: Path, cwd: Path) -> tuple[Path, BatchScript | None]:
    """The script's absolute path, and its header and body when it is a batch script."""
    path = script if script.is_absolute() else cwd / script
    try:
        text = read_bounded(path, MAX_SCRIPT)
    except UnsafeFileError as exc:
        raise specs.SpecError(str(exc)) from None
    except OSError as exc:
        raise specs.SpecError(f"cannot read {script}: {exc.strerror}") from None
    return path, parse_batch_script(text, str(script)) if is_batch_script(path, text) else None


def _counts(req: SubmitRequest, cfg: SubmitConfig) -> dict[str, Any]:
    """--max-requeues and --restarts-in-place, else the config's."""
    given = {
        "max_requeues": (req.max_requeues, 10**6),
        "restarts_in_place": (req.restarts_in_place, 100),
    }
    out: dict[str, Any] = {}
    for name, (value, most) in given.items():
        flag = name.replace("_", "-")
        out[name] = getattr(cfg, name) if value is None else specs.validate_count(value, flag, most)
    return out


def _signal(
    signal: str | None, time: str | None, explicit: bool
) -> tuple[specs.SignalSpec | None, list[str]]:
    """The warning signal; the built-in default's lead shrinks to fit a short time limit (and
    says so), while a lead the user chose is kept (and refused by TrainingJob if it cannot work)."""
    if not signal:
        return None, []
    spec = specs.validate_signal(signal)
    limit = specs.time_seconds(time) if time else None
    if explicit or limit is None:
        return spec, []
    lead = specs.default_signal_lead(limit, spec.lead)
    if lead == spec.lead:
        return spec, []
    chosen = dataclasses.replace(spec, lead=lead)
    note = (
        f"the time limit {time} is short: the warning signal comes {lead} s before it "
        f"({chosen.sbatch()}) instead of the default {spec.lead} s; --signal chooses another"
    )
    return chosen, [note]


def _requeue(given: bool | None, own: dict[str, str | None], cfg: SubmitConfig) -> bool | None:
    """--requeue/--no-requeue, else the script's own line, else True when the config says so."""
    if given is not None:
        return given
    if "requeue" in own:
        return True
    if "no-requeue" in own:
        return False
    return True if cfg.requeue else None


def _declared_extras(
    req: SubmitRequest, own: dict[str, str | None], cfg: SubmitConfig
) -> tuple[list[tuple[str, str | None]], list[tuple[str, str]]]:
    """The `#SBATCH` options and shim variables of the `Use.SBATCH` / `Use.ENV` declarations."""
    sbatch: list[tuple[str, str | None]] = []
    env: list[tuple[str, str]] = []
    for f, opt in declared(type(req)):
        if opt.use not in (Use.SBATCH, Use.ENV):
            continue
        value: Any = getattr(req, f.name)
        if value in (None, False) and opt.sbatch and opt.use is Use.SBATCH:
            value = own.get(opt.sbatch, True) if opt.sbatch in own else None
        if value in (None, False) and opt.config:
            value = getattr(cfg, opt.config)
        if value in (None, False):
            continue
        if opt.check is not None and value is not True:
            value = opt.check(value)
        if opt.use is Use.SBATCH and opt.sbatch:
            sbatch.append((opt.sbatch, None if value is True else str(value)))
        elif opt.env:
            env.append((opt.env, "1" if value is True else str(value)))
    return sbatch, env


def _output(job_name: str, array: str | None) -> str:
    """`%x-%A_%a.out` for arrays, `%x-%j.out` otherwise (`slurm-...` if the name has a `/`)."""
    prefix = "slurm" if "/" in job_name else "%x"
    return f"{prefix}-%A_%a.out" if array else f"{prefix}-%j.out"


def _split_extra(lines: list[str]) -> tuple[list[str], list[str]]:
    sbatch = [line for line in lines if line.lstrip().startswith("#SBATCH")]
    return sbatch, [line for line in lines if not line.lstrip().startswith("#SBATCH")]


def _words(text: str, what: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise specs.SpecError(f"{what} {text!r}: {exc}") from None


def _abs(path: str, cwd: Path) -> str:
    p = Path(path).expanduser()
    return str(p if p.is_absolute() else cwd / p)
