"""What `rtool submit` submits: the request, merged with the config and the user's own batch
script, becomes a validated `TrainingJob` (pure: reads the script file, runs no command).

Precedence: command line > the script's own `#SBATCH` lines > the `[submit]` config.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from slurm_templates import specs
from slurm_templates.batchfile import BatchScript, override, parse_batch_script
from slurm_templates.config import SubmitConfig, SwitchesConfig
from slurm_templates.training import TrainingJob

BATCH_SUFFIXES = (".slurm", ".sbatch", ".sh", ".bash")


@dataclass
class SubmitRequest:
    """The command-line options of `rtool submit` (None: not given)."""

    script: Path
    array: str | None = None
    nodes: int | None = None
    gpus_per_node: int | None = None
    time: str | None = None
    signal: str | None = None
    requeue: bool | None = None
    after: str | None = None  # a job id (--after-name is resolved to one by the caller)
    job_name: str | None = None
    partition: str | None = None
    account: str | None = None
    exclude: str | None = None
    kill_switch: str | None = None
    save_switch: str | None = None
    launcher: str | None = None
    python: str | None = None
    script_args: str | None = None
    auto_requeue: bool = False
    max_requeues: int | None = None
    heartbeat: str | None = None
    exit_before_end: str | None = None
    extra_args: list[str] = field(default_factory=list)


def switch_path(given: str | None, configured: str | None, default: str, cwd: Path) -> str:
    """An absolute switch path: the option, else the config, else `default` in `cwd`."""
    raw = given or configured or default
    path = Path(raw).expanduser()
    return str(path if path.is_absolute() else (cwd / path))


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


def build_job(req: SubmitRequest, cfg: SubmitConfig, sw: SwitchesConfig, cwd: Path) -> TrainingJob:
    """The validated job for a request (raises SpecError with one line)."""
    path = req.script if req.script.is_absolute() else cwd / req.script
    try:
        text = path.read_text()
    except OSError as exc:
        raise specs.SpecError(f"cannot read {req.script}: {exc.strerror}") from None
    batch = parse_batch_script(text, str(req.script)) if is_batch_script(path, text) else None
    own = batch.options if batch else {}

    def pick(cli: str | None, name: str, config: str | None = None) -> str | None:
        return cli or own.get(name) or config

    array = pick(req.array, "array", cfg.array)
    signal = pick(req.signal, "signal", cfg.signal)
    requeue = req.requeue
    if requeue is None:
        requeue = True if "requeue" in own else False if "no-requeue" in own else None
    if requeue is None and cfg.requeue:
        requeue = True
    sbatch_lines, setup_lines = _split_extra(cfg.extra_lines)
    job_name = pick(req.job_name, "job-name") or path.stem
    job = TrainingJob(
        job_name=job_name,
        time=pick(req.time, "time", cfg.time),
        partition=pick(req.partition, "partition", cfg.partition),
        account=pick(req.account, "account", cfg.account),
        output=None if "output" in own else _output(job_name, array),
        extra_sbatch=sbatch_lines,
        setup_lines=setup_lines,
        kill_switch=switch_path(req.kill_switch, sw.kill, "kill-switch", cwd),
        save_switch=switch_path(req.save_switch, sw.save, "save-switch", cwd),
        script=None if batch else str(path),
        python=req.python or cfg.python,
        launcher=_words(req.launcher or cfg.launcher or "", "launcher"),
        script_args=_words(req.script_args or "", "script arguments"),
        body=batch.body if batch else None,
        header_lines=_header(batch, req) if batch else [],
        array=array,
        nodes=req.nodes,
        gpus_per_node=req.gpus_per_node,
        signal=specs.validate_signal(signal) if signal else None,
        requeue=requeue,
        dependency=f"afterany:{specs.validate_job_id(req.after)}" if req.after else None,
        exclude=req.exclude,
        auto_requeue=req.auto_requeue,
        max_requeues=req.max_requeues or cfg.max_requeues,
        heartbeat=_abs(req.heartbeat, cwd),
        exit_before_end=req.exit_before_end,
    )
    for arg in req.extra_args:
        specs.check_text(arg, "sbatch argument")
    return job


def _header(batch: BatchScript, req: SubmitRequest) -> list[str]:
    """The user's header lines, with the ones rtool sets itself commented out."""
    mine = {"job-name", "time", "partition", "account", "array", "signal", "requeue"}
    mine |= {n for n, v in (("nodes", req.nodes), ("exclude", req.exclude)) if v is not None}
    if req.gpus_per_node is not None:
        mine.add("gpus-per-node")
    if req.after:
        mine.add("dependency")
    if req.auto_requeue:
        mine.add("open-mode")
    return override(batch.header, mine)


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


def _abs(path: str | None, cwd: Path) -> str | None:
    if not path:
        return None
    p = Path(path).expanduser()
    return str(p if p.is_absolute() else cwd / p)
