"""The launch line (rtool/slurm_templates/launch.py): what each launcher gets added so the nodes
form one world, what the user already set is kept, and any launcher word reaches the launcher
exactly (its `$NAME` expanded on the node). Multi-node runs on Slurm: tests/e2e/test_launchers.py.
"""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtool.slurm_templates.jobs import render_job
from rtool.slurm_templates.launch import LaunchMode, Word, build
from rtool.slurm_templates.specs import SpecError
from rtool.slurm_templates.training import TrainingJob


def words(launcher: str, nodes: int | None = 2, gpus: int | None = None) -> str:
    got = build(launcher.split(), "python", "/t.py", ["--a"], nodes, gpus)
    assert got.function is not None
    return " ".join(got.function.replace("\\\n", " ").split())


def test_torchrun_gets_the_nodes_their_rank_and_the_first_nodes_address() -> None:
    assert words("torchrun --nproc-per-node 8") == (
        'exec torchrun --nproc-per-node 8 --nnodes "$SLURM_NNODES" --node-rank "$SLURM_NODEID" '
        '--master-addr "$RTOOL_MASTER_ADDR" --master-port "$RTOOL_MASTER_PORT" "$@"'
    )
    launch = build(["torchrun"], "python", "/t.py", [], 2, None)
    assert launch.mode is LaunchMode.TORCHRUN and launch.rendezvous
    assert launch.command.startswith('srun --nodes="$SLURM_JOB_NUM_NODES" --ntasks=')
    assert "--ntasks-per-node=1 bash -c '_rtool_launch \"$@\"' rtool-launch /t.py" in launch.command
    assert build(["python3", "-m", "torch.distributed.run"], "p", "/t.py", [], 2, 1).rendezvous


def test_torchrun_with_a_rendezvous_backend_gets_an_endpoint_and_the_job_as_its_id() -> None:
    assert words("torchrun --rdzv-backend=c10d") == (
        'exec torchrun --rdzv-backend=c10d --nnodes "$SLURM_NNODES" --rdzv-endpoint '
        '"$RTOOL_MASTER_ADDR":"$RTOOL_MASTER_PORT" --rdzv-id "$SLURM_JOB_ID" "$@"'
    )


def test_what_the_launcher_sets_itself_is_kept() -> None:
    mine = "torchrun --nnodes 2 --node_rank=0 --rdzv-endpoint h:29500"
    assert words(mine) == f'exec {mine} "$@"'
    assert not build(mine.split(), "p", "/t.py", [], 2, None).rendezvous
    assert words("torchrun --standalone", nodes=1) == 'exec torchrun --standalone "$@"'
    with pytest.raises(SpecError, match="--standalone makes a world of one node"):
        build(["torchrun", "--standalone"], "p", "/t.py", [], 2, None)


def test_accelerate_gets_machines_rank_address_and_all_processes() -> None:
    assert words("accelerate launch --multi_gpu", gpus=8) == (
        'exec accelerate launch --multi_gpu --num_machines "$SLURM_NNODES" --machine_rank '
        '"$SLURM_NODEID" --main_process_ip "$RTOOL_MASTER_ADDR" --main_process_port '
        '"$RTOOL_MASTER_PORT" --num_processes "$((SLURM_NNODES * 8))" "$@"'
    )
    kept = words("accelerate launch --config_file a.yaml --main-process-port 1234")
    assert "--num_processes" not in kept and "--main_process_port" not in kept


def test_srun_native_mode_sets_the_usual_variables_on_each_process() -> None:
    job = TrainingJob(job_name="j", script="/t.py", launcher=["srun"], nodes=3, gpus_per_node=4)
    assert ("ntasks-per-node", "4") in job.sbatch_options()
    text = render_job(job)
    assert 'export RANK="$SLURM_PROCID" WORLD_SIZE="$SLURM_NTASKS" LOCAL_RANK=' in text
    assert "_rtool_train srun bash -c '_rtool_launch \"$@\"' rtool-launch python /t.py" in text
    job = TrainingJob(job_name="j", script="/t.py", launcher=["srun", "--ntasks-per-node=2"])
    assert ("ntasks-per-node", "2") in job.sbatch_options()
    with pytest.raises(SpecError, match="ntasks-per-node"):
        TrainingJob(job_name="j", script="/t.py", launcher=["srun", "--ntasks-per-node", "x"])


def test_no_launcher_runs_python_and_another_launcher_runs_as_written() -> None:
    plain = build([], "python3", "/t.py", ["a b"], 2, None)
    assert plain.command == "srun python3 /t.py 'a b'" and plain.function is None
    other = build(["deepspeed", "--x=$SLURM_NODEID"], "p", "/t.py", [], 2, None)
    assert other.mode is LaunchMode.OTHER and not other.rendezvous
    assert other.function == 'exec deepspeed --x="$SLURM_NODEID" "$@"'
    assert other.command.startswith("srun bash -c ")


_ENV = {"SLURM_NODEID": "3", "X_1": "a b'\"", "PATH": "/usr/bin:/bin"}
#: (as written, as the launcher gets it): variables, and dollars that are no variable
_TOKENS = st.sampled_from(
    [
        ("$SLURM_NODEID-", "3-"),  # a bare name ends where the name ends
        ("${X_1}", _ENV["X_1"]),
        ("$UNSET_ONE/", "/"),
        ("$-", "$-"),
        ("$1", "$1"),
        ("$$.", "$$."),
        ("$ ", "$ "),
    ]
)
_CHARS = st.characters(exclude_categories=("Cs",), exclude_characters="$`")
_TEXT = st.text(_CHARS, min_size=1, max_size=10)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(_TOKENS, _TEXT.map(lambda t: (t, t))), min_size=1, max_size=6))
def test_any_launcher_word_reaches_the_launcher_with_its_variables_expanded(
    tokens: list[tuple[str, str]],
) -> None:
    word = "".join(w for w, _ in tokens).replace("\x00", "")
    expected = "".join(e for _, e in tokens).replace("\x00", "")
    res = subprocess.run(
        ["bash", "-c", "printf '%s\\0' " + Word(word).shell()],
        env=_ENV,
        capture_output=True,
    )
    assert res.stdout.decode() == expected + "\0", (word, Word(word).shell())


@pytest.mark.parametrize("word", ["$(id)", "a`id`", "${X:-y}", "${A[1]}"])
def test_a_command_or_a_shell_expression_in_a_launcher_word_is_refused(word: str) -> None:
    with pytest.raises(SpecError, match="launcher word"):
        TrainingJob(job_name="j", script="/t.py", launcher=["launcher", word])
