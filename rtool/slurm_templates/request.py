"""`rtool submit`'s fields, each declared once.

`SubmitRequest` is the one place a submit option is written: its type, default, command-line
flag and help, the `#SBATCH` option it sets, the `[submit]` config key that gives its default,
the `RTOOL_*` variable it exports for the shim, and its validator. From these declarations come
the typer command (`rtool.app.commands.submit_cmd`), the user's `#SBATCH` lines that rtool comments
out, and, for a field that is only an `#SBATCH` option or a shim variable, its place in the
rendered script (`build_job` puts it in `TrainingJob.more_sbatch` / `more_env`). See
docs/submit.md, "Adding an option".

This module imports nothing heavy: the CLI reads it at start-up.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtool.slurm_templates.specs import SpecError, validate_hang_after

ENV_NAME = re.compile(r"^RTOOL_[A-Z0-9_]+$")
_RUN_NAME = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.+=@:-]{0,199}")


def validate_run_name(name: str) -> str:
    """Run names (docs/runs.md): letters, digits and `_.+=@:-`, not starting with '-'."""
    if not _RUN_NAME.fullmatch(name):
        raise SpecError(
            f"run name {name!r}: use letters, digits and _.+=@:- (no spaces), not starting with -"
        )
    return name


class Use(enum.Enum):
    """How a declared value reaches the rendered job."""

    #: `build_job` computes the job's value from it (precedence, paths, parsing).
    BUILT = "built"
    #: Copied as is to the `TrainingJob` attribute of the same name.
    JOB = "job"
    #: Only an `#SBATCH` option: CLI > the script's own line > `[submit]` config, then `check`;
    #: rendered from `TrainingJob.more_sbatch` (a bool gives a bare flag when true).
    SBATCH = "sbatch"
    #: Only a variable exported for the shim (`env=`): rendered from `TrainingJob.more_env`.
    ENV = "env"
    #: Read by the command itself (dry run, template, output), not part of the job.
    COMMAND = "command"


@dataclass(frozen=True)
class SubmitOption:
    """What one `SubmitRequest` field means outside Python."""

    help: str
    #: typer declarations: `("--array",)`, `("--requeue/--no-requeue",)`; empty: an argument.
    flags: tuple[str, ...] = ()
    #: The `#SBATCH` option it sets; the user's own line for it is commented out when it is set.
    sbatch: str | None = None
    #: The `[submit]` key of its default (CLI > the script's own `#SBATCH` line > config).
    config: str | None = None
    #: The variable the batch script exports for the in-loop shim (`RTOOL_...`).
    env: str | None = None
    #: How the value reaches the job (see `Use`).
    use: Use = Use.BUILT
    #: Validates and normalises a given value (raises `specs.SpecError`).
    check: Callable[[Any], Any] | None = None
    #: Its `#SBATCH` line is only overridden when the option is given (else the user's stays).
    sbatch_if_given: bool = False

    def __post_init__(self) -> None:
        if self.use is Use.SBATCH and not self.sbatch:
            raise ValueError("a Use.SBATCH option needs sbatch=NAME")
        if self.use is Use.ENV and not (self.env and ENV_NAME.match(self.env)):
            raise ValueError(f"a Use.ENV option needs env=RTOOL_NAME (got {self.env!r})")


_META = "rtool_submit"


def option(
    *flags: str,
    help: str,
    default: Any = None,
    factory: Callable[[], Any] | None = None,
    required: bool = False,
    **kw: Any,
) -> Any:
    """A `SubmitRequest` field: `array: str | None = option("--array", help="...")`.

    No flags: a positional argument. Options default to None (not given)."""
    meta = {_META: SubmitOption(help=help, flags=flags, **kw)}
    if required:
        return dataclasses.field(metadata=meta)
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclass
class SubmitRequest:
    """The command line of `rtool submit` (None: not given). One field = one option."""

    script: Path = option(help="A Python training script, or a .slurm batch script.", required=True)
    extra_args: list[str] = option(help="Extra sbatch arguments (after --).", factory=list)
    array: str | None = option(
        "--array", help="Array spec, e.g. 1-10%1.", sbatch="array", config="array"
    )
    nodes: int | None = option(
        "--nodes", help="Number of nodes.", sbatch="nodes", sbatch_if_given=True, use=Use.JOB
    )
    gpus_per_node: int | None = option(
        "--gpus-per-node",
        help="GPUs per node.",
        sbatch="gpus-per-node",
        sbatch_if_given=True,
        use=Use.JOB,
    )
    time: str | None = option(
        "--time",
        help="Time limit: 20:00:00, 2-00:00:00, 20h.",
        sbatch="time",
        config="time",
    )
    signal: str | None = option(
        "--signal",
        help="[B:][R:]SIG@SECONDS before the time limit (a shorter lead for a short --time; "
        "always sent to the batch shell, B:).",
        sbatch="signal",
        config="signal",
    )
    requeue: bool | None = option(
        "--requeue/--no-requeue",
        help="Requeue the job after a node failure or a preemption (rtool sees that a preempted "
        "job comes back: docs/submit.md).",
        sbatch="requeue",
    )
    after: str | None = option(
        "--after",
        help="Start after this job ends (afterany).",
        sbatch="dependency",
        sbatch_if_given=True,
    )
    after_name: str | None = option(
        "--after-name",
        help="Start after your running or pending job of this name.",
        use=Use.COMMAND,
    )
    job_name: str | None = option(
        "--job-name", help="Job name (default: --run, else the script name).", sbatch="job-name"
    )
    partition: str | None = option(
        "--partition", help="Partition.", sbatch="partition", config="partition"
    )
    account: str | None = option("--account", help="Account.", sbatch="account", config="account")
    exclude: str | None = option(
        "--exclude",
        help="Nodes to avoid: node[01-03].",
        sbatch="exclude",
        sbatch_if_given=True,
        use=Use.JOB,
    )
    kill_switch: str | None = option(
        "--kill-switch", help="Kill switch path (default: ./kill-switch.RUN or [switches] kill)."
    )
    save_switch: str | None = option(
        "--save-switch", help="Save switch path (default: ./save-switch.RUN or [switches] save)."
    )
    template: Path | None = option(
        "--template", help="Your own training template.", use=Use.COMMAND
    )
    launcher: str | None = option(
        "--launcher",
        help='Starts the script on every node, e.g. "torchrun --nproc-per-node 8", "accelerate '
        'launch", "srun"; rtool adds the nodes, node rank and rendezvous ($VARS expand per node).',
        config="launcher",
    )
    python: str | None = option("--python", help="Python interpreter.", config="python")
    script_args: str | None = option("--args", help="Arguments of the Python script.")
    auto_requeue: bool = option(
        "--auto-requeue",
        help="Without an array: the job requeues itself after the signal.",
        default=False,
        sbatch="open-mode",
        sbatch_if_given=True,
        use=Use.JOB,
    )
    max_requeues: int | None = option(
        "--max-requeues",
        help="Bound of --auto-requeue.",
        config="max_requeues",
    )
    restarts_in_place: int | None = option(
        "--restarts-in-place",
        help="A training that crashed or hung runs again on the same allocation (all nodes, "
        "from the last checkpoint) up to N times per attempt; 0: never.",
        config="restarts_in_place",
    )
    spare_nodes: int | None = option(
        "--spare-nodes",
        help="Allocate this many nodes more than --nodes (sbatch --no-kill) and train on "
        "--nodes of them: when a node fails, the training restarts in place on a spare "
        "instead of going back to the queue.",
        use=Use.JOB,
    )
    hang_after: str | None = option(
        "--hang-after",
        help="Shim: no step this long is a hang (stacks to the log, exit 89, restarted in "
        "place): a duration, off, or auto (ten times the longest step, at least 5 s, 5 min "
        "while the loop warms up; the default).",
        env="RTOOL_HANG_AFTER",
        use=Use.ENV,
        config="hang_after",
        check=validate_hang_after,
    )
    save_every: str | None = option(
        "--save-every",
        help="Shim: also save this often (auto: as often as keeps the measured save at 1% of "
        "the time), or off.",
        env="RTOOL_SAVE_EVERY",
        use=Use.ENV,
        config="save_every",
        check=lambda v: validate_hang_after(v, "save-every"),
    )
    flight_recorder: bool = option(
        "--flight-recorder",
        help="Turn on PyTorch's NCCL flight recorder (costs memory; never overrides your own "
        "TORCH_NCCL_* values) and name its dumps when a launch hangs (docs/guide/hangs.md).",
        default=False,
        env="RTOOL_FLIGHT_RECORDER",
        use=Use.ENV,
        config="flight_recorder",
    )
    heartbeat: str | None = option("--heartbeat", help="Heartbeat file for the shim.")
    run: str | None = option(
        "--run",
        help="Run name, also the job name unless --job-name is given; jobs with the same run "
        "continue it.",
        env="RTOOL_RUN",
        use=Use.ENV,
        check=validate_run_name,
    )
    exit_before_end: str | None = option(
        "--exit-before-end",
        help="Shim: save and exit this long before the end: auto (the default: as late as the "
        "measured save allows), a duration (10m) or off.",
        use=Use.JOB,
    )
    preflight: bool = option(
        "--preflight/--no-preflight",
        help="Check every node before training (docs/nodes.md).",
        default=True,
        use=Use.COMMAND,
    )
    exclude_suspects: bool = option(
        "--exclude-suspects/--keep-suspects",
        help="Add the suspect nodes (rtool nodes) to --exclude.",
        default=True,
        use=Use.COMMAND,
    )
    dry_run: bool = option(
        "--dry-run", help="Print the script; submit nothing.", default=False, use=Use.COMMAND
    )
    parsable: bool = option(
        "--parsable", help="Print only the job id.", default=False, use=Use.COMMAND
    )


def declared(cls: type = SubmitRequest) -> Iterator[tuple[dataclasses.Field[Any], SubmitOption]]:
    """Each field of the request with its declaration, in declaration order."""
    for f in dataclasses.fields(cls):
        meta = f.metadata.get(_META)
        if isinstance(meta, SubmitOption):
            yield f, meta


def overridden_sbatch(req: SubmitRequest) -> set[str]:
    """The `#SBATCH` options rtool sets for this request (a user's own line for them is
    commented out): every declared one, or only when given for `sbatch_if_given` ones."""
    names = set()
    for f, opt in declared(type(req)):
        if opt.sbatch is None:
            continue
        value = getattr(req, f.name)
        if not opt.sbatch_if_given or value not in (None, False):
            names.add(opt.sbatch)
    return names


def empty_options(req: SubmitRequest) -> list[str]:
    """The options given an empty value (`--array ''`): a mistake, not "the default"."""
    return [
        opt.flags[0].split("/")[0]
        for f, opt in declared(type(req))
        if opt.flags and isinstance(value := getattr(req, f.name), str) and not value.strip()
    ]
