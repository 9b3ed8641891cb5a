"""The training job (`training.slurm.j2`): array, signal forwarding, switches, auto-requeue;
and the rules its options obey beyond their own format (specs.py): the signal against the time
limit, spare nodes, the dependency, the shim's exit-before-end, the declared extras."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from rtool.core.selfcmd import rtool_argv
from rtool.core.units import UnitError, parse_duration
from rtool.slurm_templates import launch, specs
from rtool.slurm_templates.jobs import INSTALL_RTOOL, SlurmJob
from rtool.slurm_templates.renderer import ShellCode
from rtool.slurm_templates.request import ENV_NAME

#: Exit code with which the training step asks the batch script to requeue the job
#: (auto-requeue mode); exported as RTOOL_REQUEUE_EXIT_CODE. Must equal
#: rtool.shim.REQUEUE_EXIT_CODE (not imported here: the shim lives in the training env).
REQUEUE_EXIT_CODE = 85


@dataclass
class TrainingJob(SlurmJob):
    """A training run: `srun [LAUNCHER...] PYTHON SCRIPT ARGS` or the body of a user's batch
    script, wrapped in rtool's prelude (switch exports, kill-switch check, signal trap)."""

    kill_switch: str = "kill-switch"
    save_switch: str = "save-switch"
    #: A Python script to run (absolute path), or None when `body` is given.
    script: str | None = None
    python: str = "python"
    launcher: list[str] = field(default_factory=list)
    script_args: list[str] = field(default_factory=list)
    #: The commands of a user's own batch script (run as a function, in the background).
    body: str | None = None
    #: The user's own header lines (comments, `#SBATCH` lines), kept as written.
    header_lines: list[str] = field(default_factory=list)
    #: Shell lines from the config run before the training command (`module load cuda`).
    setup_lines: list[str] = field(default_factory=list)
    array: str | None = None
    nodes: int | None = None
    gpus_per_node: int | None = None
    signal: specs.SignalSpec | None = None
    requeue: bool | None = None
    dependency: str | None = None
    exclude: str | None = None
    open_mode: str | None = None
    auto_requeue: bool = False
    max_requeues: int = 3
    heartbeat: str | None = None
    exit_before_end: str | None = None
    #: `#SBATCH` options of `Use.SBATCH` declarations (rtool/slurm_templates/request.py), in order.
    more_sbatch: list[tuple[str, str | None]] = field(default_factory=list)
    #: Variables of `Use.ENV` declarations, exported for the shim after the built-in ones.
    more_env: list[tuple[str, str]] = field(default_factory=list)
    #: How the batch script runs rtool itself (absolute; see rtool.core.selfcmd).
    rtool: list[str] = field(default_factory=rtool_argv)
    #: The pre-flight command (argv) run before training, or None (nodes.preflight).
    preflight: list[str] | None = None
    #: A launch that crashed or hung is restarted on the allocation up to this many times
    #: (per attempt; 0: never; a user's own batch script is not restarted in place).
    restarts_in_place: int = 0
    #: Nodes allocated beyond `nodes` (`--no-kill`): a failed node is replaced in place.
    spare_nodes: int | None = None
    #: The command asked before such a restart (`rtool preflight`; `--restart-after RC` added).
    restart_check: list[str] | None = None
    template: str = "training.slurm.j2"
    #: What rtool chose for the user (e.g. a shorter default signal lead), said on stderr.
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._validate_run()
        self.more_env = _more_env(self.more_sbatch, self.more_env)
        if self.array:
            self.array = specs.validate_array(self.array)
        for what in ("nodes", "gpus_per_node"):
            value = getattr(self, what)
            if value is not None:
                specs.validate_positive(value, what.replace("_", "-"))
        if self.exclude:
            specs.validate_nodelist(self.exclude)
        if self.dependency:
            _dependency(self.dependency)
        if self.open_mode not in (None, "append", "truncate"):
            raise specs.SpecError(f"open mode {self.open_mode!r}: append or truncate")
        if self.exit_before_end:
            self.exit_before_end = _exit_before_end(self.exit_before_end)
        specs.validate_count(self.restarts_in_place, "restarts-in-place", 100)
        self.spare_nodes = _spares(self.spare_nodes, self.body, self.restarts_in_place)
        self.signal = _signal(self.signal, self.time, self.notes)
        self._validate_requeue()
        if self.script is not None:
            _ = self.launch  # validates the launcher (one line)

    def _validate_run(self) -> None:
        if (self.script is None) == (self.body is None):
            raise specs.SpecError("a training job needs exactly one of a script or a batch body")
        # Paths, launcher and arguments only reach the shell part, always through `q`:
        # even a newline in them is harmless there, so they are not restricted.
        self.setup_lines = [
            ShellCode(specs.check_text(line, "setup line")) for line in self.setup_lines
        ]
        if self.body is not None:
            self.body = ShellCode(self.body)
        self.header_lines = [
            ShellCode(specs.check_text(line, "header line")) for line in self.header_lines
        ]

    def _validate_requeue(self) -> None:
        if not self.auto_requeue:
            return
        if self.array:
            raise specs.SpecError("--auto-requeue is for jobs without --array (an array requeues)")
        if self.requeue is False:
            raise specs.SpecError("--auto-requeue needs a requeueable job (drop --no-requeue)")
        specs.validate_count(self.max_requeues, "max-requeues")
        self.requeue = True
        self.open_mode = self.open_mode or "append"

    @property
    def self_command(self) -> str | None:
        """rtool's own command in the script (the pre-flight), checked on the node first."""
        return self.rtool[0] if self.preflight or self.restart_check else None

    requeue_exit_code = REQUEUE_EXIT_CODE
    self_command_fix = (
        f"{INSTALL_RTOOL} or name the path the nodes see in the config: "
        '[submit] rtool = "/shared/venv/bin/rtool"'
    )

    @property
    def run(self) -> str:
        """The run this job is an attempt of (`--run`, default the job name)."""
        return dict(self.more_env).get("RTOOL_RUN") or self.job_name

    @property
    def launch(self) -> launch.Launch:
        """How the script starts on every node (rtool/slurm_templates/launch.py)."""
        if self.script is None:
            raise specs.SpecError("a batch script's own commands have no launch line")
        return launch.build(
            self.launcher,
            self.python,
            self.script,
            self.script_args,
            self.nodes,
            self.gpus_per_node,
        )

    @property
    def flight_recorder(self) -> bool:
        """PyTorch's NCCL flight recorder is turned on (`--flight-recorder`, rtool.runs.flight)."""
        return dict(self.more_env).get("RTOOL_FLIGHT_RECORDER") == "1"

    @property
    def requeue_on_preempt(self) -> bool:
        """A preempted attempt is requeued by the batch script (docs/submit.md, Preemption)."""
        return bool(self.requeue or self.array or self.auto_requeue)

    @property
    def shim_signals(self) -> str:
        """RTOOL_SIGNALS for the shim: the chosen signal, and TERM (sent at cancel/time out)."""
        names = [self.signal.name] if self.signal else []
        return ",".join(dict.fromkeys([*names, "TERM"]))

    def sbatch_options(self) -> list[tuple[str, str | None]]:
        pairs = super().sbatch_options()
        for opt, value in (
            ("array", self.array),
            ("nodes", (self.nodes or 1) + self.spare_nodes if self.spare_nodes else self.nodes),
            ("gpus-per-node", self.gpus_per_node),
            ("signal", self.signal.sbatch() if self.signal else None),
            ("dependency", self.dependency),
            ("exclude", self.exclude),
            ("open-mode", self.open_mode),
        ):
            if value is not None:
                pairs.append((opt, str(value)))
        if self.spare_nodes:  # a failed node leaves the job running on the others
            pairs.append(("no-kill", None))
        if self.requeue is not None:
            pairs.append(("requeue" if self.requeue else "no-requeue", None))
        tasks = self.launch.tasks_per_node if self.script is not None else None
        if tasks is not None and "ntasks-per-node" not in dict(self.more_sbatch):
            pairs.append(("ntasks-per-node", str(tasks)))  # the srun-native launch
        return [*pairs, *self.more_sbatch]


_DEPENDENCIES = ("afterany", "afterok", "afternotok", "after", "singleton")


def _more_env(
    more_sbatch: list[tuple[str, str | None]], more_env: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The declared `#SBATCH` values are plain text, the declared variables `RTOOL_NAME`."""
    for _, value in more_sbatch:
        if value is not None:
            specs.check_text(value, "sbatch value")
    for name, _ in more_env:
        if not ENV_NAME.match(name):
            raise specs.SpecError(f"variable name {name!r}: expected RTOOL_NAME")
    return [(ShellCode(name), value) for name, value in more_env]


def _dependency(value: str) -> None:
    kind, _, job_id = value.partition(":")
    if kind not in _DEPENDENCIES:
        raise specs.SpecError(f"dependency {value!r}: unknown kind {kind!r}")
    if job_id:
        specs.validate_job_id(job_id)


def _exit_before_end(value: str) -> str:
    """The shim's RTOOL_EXIT_BEFORE_END: `auto`, `off` or a duration (`10m`)."""
    if value in ("auto", "off"):
        return value
    try:
        parse_duration(value)
    except UnitError:
        raise specs.SpecError(
            f"exit-before-end {value!r}: auto, off or a duration like 10m"
        ) from None
    return value


def _spares(spare_nodes: int | None, body: str | None, restarts_in_place: int) -> int | None:
    """Spare nodes (None for none): a Python script's, restarted in place."""
    if not spare_nodes:
        return None
    specs.validate_count(spare_nodes, "spare-nodes", 100)
    if body is not None:
        raise specs.SpecError(
            "--spare-nodes needs a Python script: rtool launches it on --nodes of the "
            "allocation (a batch script's own commands choose their nodes themselves)"
        )
    if not restarts_in_place:
        raise specs.SpecError(
            "--spare-nodes needs restarts in place (a failed node is replaced by "
            "restarting the training on a spare): drop --restarts-in-place 0"
        )
    return spare_nodes


def _signal(
    spec: specs.SignalSpec | None, time: str | None, notes: list[str]
) -> specs.SignalSpec | None:
    """The signal as sent to the batch shell (`B:`; said in `notes` when it was not), its lead
    shorter than the time limit."""
    if spec is not None and not spec.batch:
        given = spec.sbatch()
        spec = dataclasses.replace(spec, batch=True)
        notes.append(
            f"--signal {given} is sent as {spec.sbatch()}: rtool forwards the signal "
            "from the batch shell to the processes that handle it (without B: Slurm signals "
            "every process of the job, and a launcher such as torchrun dies of it)"
        )
    if spec is None or not time:
        return spec
    limit = specs.time_seconds(time)
    if limit is not None and spec.lead >= limit:
        fits = specs.default_signal_lead(limit, spec.lead)
        hint = dataclasses.replace(spec, lead=fits).sbatch()
        raise specs.SpecError(
            f"signal lead time {spec.lead}s is not shorter than the time limit "
            f"{time}: the signal would come at the start (e.g. --signal {hint})"
        )
    return spec
