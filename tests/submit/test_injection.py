"""Hostile values (quotes, `;`, `$(...)`, newlines) in a job name, paths, launcher and script
arguments: the rendered script passes `bash -n`, and running its prelude runs nothing injected."""

from __future__ import annotations

import contextlib
import socket
import subprocess
from pathlib import Path

import pytest

from rtool.slurm_templates.jobs import render_job
from rtool.slurm_templates.renderer import ShellCode, TemplateError
from rtool.slurm_templates.specs import SpecError, validate_signal
from rtool.slurm_templates.training import TrainingJob

END = "# ---- end of the rtool prelude\n"


def hostile(tmp_path: Path) -> dict[str, str]:
    canary = tmp_path / "PWNED"
    return {
        "name": "x'; rm -rf ~ #",
        "kill": f"{tmp_path}/k'; touch {canary}; '\n touch {canary}2 #$(touch {canary}3)",
        "save": f'{tmp_path}/s"; touch {canary}4; "`touch {canary}5`',
        "beat": f"{tmp_path}/hb\n$(touch {canary}6)",
        "arg": f"a'b\nc; touch {canary}7",
    }


def make_job(tmp_path: Path) -> TrainingJob:
    h = hostile(tmp_path)
    return TrainingJob(
        job_name=h["name"],
        script=str(tmp_path / "train; touch PWNED8.py"),
        kill_switch=h["kill"],
        save_switch=h["save"],
        heartbeat=h["beat"],
        launcher=["torchrun", "--x=';touch PWNED9 #", f'--rdzv-conf=id=$SLURM_JOB_ID"; {h["arg"]}'],
        script_args=[h["arg"], "--n", "2"],
        signal=validate_signal("B:USR1@600"),
        time="01:00:00",
    )


def run_bash(text: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "precious").write_text("keep me")
    return subprocess.run(
        ["bash", "-c", text],
        text=True,
        capture_output=True,
        cwd=tmp_path,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin", **env},
        timeout=30,
    )


def test_hostile_values_are_inert(tmp_path: Path) -> None:
    text = render_job(make_job(tmp_path))
    assert '#SBATCH --job-name="x\'; rm -rf ~ #"' in text
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
    prelude = text[: text.index(END)]
    probe = 'printf "%s\\0" "$RTOOL_KILL_SWITCH" "$RTOOL_SAVE_SWITCH" "$RTOOL_HEARTBEAT"'
    res = run_bash(prelude + probe, tmp_path)
    assert res.returncode == 0, res.stderr
    h = hostile(tmp_path)
    assert res.stdout.split("\0")[:3] == [h["kill"], h["save"], h["beat"]]
    assert not list(tmp_path.glob("PWNED*")), "an injected command ran"
    assert (tmp_path / "home" / "precious").read_text() == "keep me"


FAKES = {
    # srun: drop its options, run the command (on "each node": here, once)
    "srun": 'while [ "${1#-}" != "$1" ]; do shift; done; exec "$@"',
    # scontrol: the allocation's first node and its address, as Slurm would say them
    "scontrol": 'case "$2" in hostnames) echo n7 ;; node) echo "NodeName=$3 NodeAddr=10.9.8.7 '
    'NodeHostName=h7" ;; esac',
    "torchrun": "printf '%s\\0' \"$@\"",
}


def fake_bin(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name, body in FAKES.items():
        (folder / name).write_text(f"#!/bin/bash\n{body}\n")
        (folder / name).chmod(0o755)
    return folder


def test_script_arguments_reach_the_command_unchanged(tmp_path: Path) -> None:
    """The whole script runs (srun, scontrol and torchrun are stand-ins that print): the
    launcher's words, rtool's rendezvous on the first node's address and the script's
    arguments reach torchrun exactly, variables expanded on the node, nothing injected."""
    text = render_job(make_job(tmp_path))
    env = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NUM_NODES": "2", "SLURM_NNODES": "2"}
    env |= {"SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "n[7-8]"}
    with socket.socket() as taken:  # the job's first port is in use here: the next one is taken
        with contextlib.suppress(OSError):
            taken.bind(("127.0.0.1", 15000 + 4242))
            taken.listen()
        res = run_bash(text, tmp_path, PATH=f"{fake_bin(tmp_path)}:/usr/bin:/bin", **env)
    assert res.returncode == 0, res.stderr
    h = hostile(tmp_path)
    port = res.stderr.split("10.9.8.7:")[1].split(")")[0]
    assert 15000 + 4242 < int(port) < 15000 + 4242 + 100
    assert res.stdout.split("\0")[:-1] == [
        "--x=';touch PWNED9 #",
        f'--rdzv-conf=id=4242"; {h["arg"]}',
        *("--nnodes", "2", "--node-rank", "1"),
        *("--master-addr", "10.9.8.7", "--master-port", port),
        str(tmp_path / "train; touch PWNED8.py"),
        h["arg"],
        "--n",
        "2",
    ]
    assert f"rendezvous on n7 (10.9.8.7:{port})" in res.stderr
    assert not list(tmp_path.glob("PWNED*"))


@pytest.mark.parametrize("word", ["--x=$(touch PWNED)", "--x=`id`", "--x=${A:-$(id)}"])
def test_a_command_in_a_launcher_word_is_refused(tmp_path: Path, word: str) -> None:
    with pytest.raises(SpecError, match="launcher word"):
        TrainingJob(job_name="a", script="/x.py", launcher=["torchrun", word])


def test_kill_switch_exits_before_anything_else(tmp_path: Path) -> None:
    job = make_job(tmp_path)
    job.kill_switch = str(tmp_path / "kill me")
    job.setup_lines = [
        ShellCode(f"touch {tmp_path}/setup-ran")
    ]  # config setup lines come after the check
    (tmp_path / "kill me").touch()
    res = run_bash(render_job(job), tmp_path)
    assert res.returncode == 0
    assert "kill switch" in res.stderr and "present" in res.stderr
    assert not (tmp_path / "setup-ran").exists()
    assert "not found" not in res.stderr  # srun was never reached


def test_newline_in_a_job_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="newline"):
        TrainingJob(job_name="a\nrm -rf ~", script="/x.py")
    job = make_job(tmp_path)
    job.job_name = "a\ntouch PWNED"  # validation bypassed: the #SBATCH filter still refuses it
    with pytest.raises(TemplateError, match="newline"):
        render_job(job)
