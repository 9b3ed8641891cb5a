"""How the training starts on every node (`rtool submit --launcher`): one job, one world.

The launcher is given as words (`torchrun --nproc-per-node 8`). rtool knows four kinds:

- no launcher: `srun PYTHON SCRIPT ARGS`, as sbatch places the tasks;
- `torchrun` (or `python -m torch.distributed.run`): one torchrun per node, with `--nnodes
  "$SLURM_NNODES" --node-rank "$SLURM_NODEID" --master-addr/--master-port` on the first
  node's address (or, with a `--rdzv-backend` such as c10d, `--rdzv-endpoint` and
  `--rdzv-id "$SLURM_JOB_ID"`), each added only when the launcher does not set it already;
- `accelerate launch`: one per node, with `--num_machines`, `--machine_rank`,
  `--main_process_ip`, `--main_process_port` and (without a config file) `--num_processes`;
- `srun [SRUN OPTIONS]` (Slurm-native): Slurm starts every process, `--ntasks-per-node` of them
  per node (default: `--gpus-per-node`, else 1), each with RANK, WORLD_SIZE, LOCAL_RANK,
  LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR and MASTER_PORT from Slurm's own variables.

Any other launcher runs as written under srun. A launcher word may name variables (`$NAME`,
`${NAME}`), expanded on each node when the launcher starts there (`--node-rank
$SLURM_NODEID` is that node's number); every other character is quoted. The first node's
address and a free port on it (`$RTOOL_MASTER_ADDR`, `$RTOOL_MASTER_PORT`) are found by the
batch script from the allocation (`_rtool_launch.j2`): node names need not resolve.
"""

from __future__ import annotations

import enum
import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

from rtool.slurm_templates.renderer import Quoted
from rtool.slurm_templates.specs import SpecError

#: `${...}` holds no `$`, `{` or `}` and is bounded: linear on any text (rtool/core/linear.py).
_VAR = re.compile(r"\$(?:\{(?P<braced>[^{}$]{0,200})\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


class LaunchMode(enum.Enum):
    PYTHON = "python"
    TORCHRUN = "torchrun"
    ACCELERATE = "accelerate"
    SRUN = "srun"
    OTHER = "other"


@dataclass(frozen=True)
class Word:
    """One shell word: literal text with `$NAME` expansions, or rtool's own shell code."""

    text: str
    raw: bool = False  # rtool's own code (e.g. `"$((SLURM_NNODES * 8))"`), printed as is

    def shell(self) -> str:
        if self.raw:
            return self.text
        out, pos = [], 0
        for m in _VAR.finditer(self.text):
            if m.start() > pos:
                out.append(shlex.quote(self.text[pos : m.start()]))
            out.append(f'"${m.group("braced") or m.group("bare")}"')
            pos = m.end()
        if pos < len(self.text) or not out:
            out.append(shlex.quote(self.text[pos:]))
        return "".join(out)


def _var(name: str) -> Word:
    return Word(f"${name}")


def check_word(word: str, what: str = "launcher") -> str:
    """A word may name variables as `$NAME` or `${NAME}`; `$(...)` and `${...:-...}` are refused."""
    braces = set()
    for m in _VAR.finditer(word):
        braced = m.group("braced")
        if braced is not None and not _NAME.fullmatch(braced):
            raise SpecError(
                f"{what} word {word!r}: only $NAME or ${{NAME}} is expanded (on each node), "
                f"not ${{{braced}}}"
            )
        if braced is not None:
            braces.add(m.start())
    if any(m.start() not in braces for m in re.finditer(r"\$\{", word)):
        raise SpecError(f"{what} word {word!r}: only $NAME or ${{NAME}} is expanded (on each node)")
    if "$(" in word or "`" in word:
        raise SpecError(
            f"{what} word {word!r}: commands ($(...) or `...`) are not run; name a variable "
            "($SLURM_JOB_ID) or set it in [submit] extra_lines"
        )
    return word


def mode_of(words: list[str]) -> LaunchMode:
    if not words:
        return LaunchMode.PYTHON
    first = PurePosixPath(words[0]).name
    if first == "torchrun" or (
        first.startswith("python") and words[1:3] == ["-m", "torch.distributed.run"]
    ):
        return LaunchMode.TORCHRUN
    if first == "accelerate" and words[1:2] == ["launch"]:
        return LaunchMode.ACCELERATE
    if first == "srun":
        return LaunchMode.SRUN
    return LaunchMode.OTHER


def _given(words: list[str]) -> dict[str, str | None]:
    """The long options of a launcher (`--node_rank=1` -> {"node-rank": "1"}); a value that is
    the next word is taken when the word after the option does not start with `-`."""
    found: dict[str, str | None] = {}
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        name, eq, value = word[2:].partition("=")
        nxt = words[i + 1] if i + 1 < len(words) else None
        found[name.replace("_", "-")] = (
            value if eq else nxt if nxt is not None and not nxt.startswith("-") else None
        )
    return found


@dataclass(frozen=True)
class Launch:
    """The launch of one training job: the srun line and, for a launcher, `_rtool_launch`."""

    mode: LaunchMode
    #: The body of the `_rtool_launch` shell function run on each node (None: no function).
    function: Quoted | None
    #: The command `_rtool_run` starts in the batch shell.
    command: Quoted
    #: The batch script finds the first node's address and a free port (RTOOL_MASTER_*).
    rendezvous: bool
    #: Processes per node in the srun-native mode (`#SBATCH --ntasks-per-node`).
    tasks_per_node: int | None = None


def build(
    launcher: list[str],
    python: str,
    script: str,
    args: list[str],
    nodes: int | None,
    gpus_per_node: int | None,
) -> Launch:
    """The launch of `script` under `launcher` (raises SpecError with one line)."""
    for word in launcher:
        check_word(word)
    mode = mode_of(launcher)
    tail = " ".join(shlex.quote(w) for w in [script, *args])
    if mode is LaunchMode.PYTHON:
        return Launch(mode, None, Quoted(f"srun {shlex.quote(python)} {tail}"), False)
    if mode is LaunchMode.SRUN:
        return _srun(launcher, python, tail, gpus_per_node)
    if mode is LaunchMode.TORCHRUN:
        words = _torchrun(launcher, nodes)
    elif mode is LaunchMode.ACCELERATE:
        words = _accelerate(launcher, gpus_per_node)
    else:
        words = [Word(w) for w in launcher]
    rdzv = any(_ADDR in w.text or _PORT in w.text for w in words)
    body = _wrap(["exec", *(w.shell() for w in words), '"$@"'])
    # A launcher rtool knows runs once per node and starts the node's processes itself.
    srun = "srun " if mode is LaunchMode.OTHER else f"srun {_ONE_PER_NODE} "
    command = f"{srun}bash -c '_rtool_launch \"$@\"' rtool-launch {tail}"
    return Launch(mode, Quoted(body), Quoted(command), rdzv)


def _wrap(parts: list[str], width: int = 92) -> str:
    """Shell words on lines of about `width` characters (continued with a backslash)."""
    lines = [parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + 1 + len(part) > width:
            lines[-1] += " \\"
            lines.append("    " + part)
        else:
            lines[-1] += " " + part
    return "\n    ".join(lines)


_ONE_PER_NODE = '--nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1'
_ADDR, _PORT = "RTOOL_MASTER_ADDR", "RTOOL_MASTER_PORT"


def _torchrun(launcher: list[str], nodes: int | None) -> list[Word]:
    given = _given(launcher)
    words = [Word(w) for w in launcher]
    if "standalone" in given:
        if nodes is not None and nodes > 1:
            raise SpecError(
                f"torchrun --standalone makes a world of one node, but the job has {nodes} "
                "nodes: drop --standalone (rtool adds the rendezvous on the first node)"
            )
        return words
    add: list[tuple[str, Word]] = [("nnodes", _var("SLURM_NNODES"))]
    backend = given.get("rdzv-backend")
    if "rdzv-backend" in given and backend != "static":  # c10d, etcd: ranks come from the store
        add += [
            ("rdzv-endpoint", Word(f"${_ADDR}:${_PORT}")),
            ("rdzv-id", _var("SLURM_JOB_ID")),
        ]
    else:
        add.append(("node-rank", _var("SLURM_NODEID")))
        if "rdzv-endpoint" not in given:
            add += [("master-addr", _var(_ADDR)), ("master-port", _var(_PORT))]
    for name, value in add:
        if name not in given:
            words += [Word(f"--{name}"), value]
    return words


#: accelerate's own ways to say how to distribute (then rtool leaves --num_processes alone).
_ACCELERATE_CONFIG = {"config-file", "num-processes"}


def _accelerate(launcher: list[str], gpus_per_node: int | None) -> list[Word]:
    given = _given(launcher)
    words = [Word(w) for w in launcher]
    add = [
        ("num_machines", _var("SLURM_NNODES")),
        ("machine_rank", _var("SLURM_NODEID")),
        ("main_process_ip", _var(_ADDR)),
        ("main_process_port", _var(_PORT)),
    ]
    if not _ACCELERATE_CONFIG & set(given):  # accelerate counts processes over all machines
        add.append(("num_processes", Word(f'"$((SLURM_NNODES * {gpus_per_node or 1}))"', True)))
    for name, value in add:
        if name.replace("_", "-") not in given:
            words += [Word(f"--{name}"), value]
    return words


def _srun(launcher: list[str], python: str, tail: str, gpus_per_node: int | None) -> Launch:
    given = _given(launcher)
    per_node = given.get("ntasks-per-node")
    if "ntasks-per-node" in given:
        if per_node is None or not per_node.isdigit() or int(per_node) < 1:
            raise SpecError(f"launcher srun --ntasks-per-node {per_node!r}: a positive number")
        tasks = int(per_node)
    else:
        tasks = gpus_per_node or 1
    opts = " ".join(Word(w).shell() for w in launcher)
    body = (
        'export RANK="$SLURM_PROCID" WORLD_SIZE="$SLURM_NTASKS" LOCAL_RANK="$SLURM_LOCALID" '
        'LOCAL_WORLD_SIZE="$SLURM_NTASKS_PER_NODE" NODE_RANK="$SLURM_NODEID" '
        f'MASTER_ADDR="${_ADDR}" MASTER_PORT="${_PORT}"; exec "$@"'
    )
    command = f"{opts} bash -c '_rtool_launch \"$@\"' rtool-launch {shlex.quote(python)} {tail}"
    return Launch(LaunchMode.SRUN, Quoted(body), Quoted(command), True, tasks)
