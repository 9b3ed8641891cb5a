"""Issue 25 part A, finding 8: another user's files never steer your run.

The second Unix user (`rtool-peer`) writes into a group-writable project folder of yours
(2775, group `rtool-peers`): a kill or save switch, a `rtool.toml`, a file at the name the
pre-flight's dirs probe would use, a swapped scrontab file.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from devtools.localslurm.users import LocalUser, shared_folder
from rtool.core.slurm import Slurm
from rtool.core.state import StateDir
from rtool.cron import scron
from rtool.nodes.preflight import dirs
from rtool.shim import Guard
from tests.conftest import CliResult
from tests.helpers import wait_for
from tests.nodes.test_preflight import fake_smi

Cli = Callable[..., CliResult]


@pytest.fixture
def shared(peer: LocalUser) -> Iterator[Path]:
    """A project folder of yours that the other user may write into (2775, shared group)."""
    d = shared_folder(peer)
    yield d
    subprocess.run(["rm", "-rf", "--", str(d)], check=False)


def plant(peer: LocalUser, path: Path, text: str = "") -> None:
    peer.run(["sh", "-c", 'printf "%s" "$2" > "$1"', "plant", str(path), text])
    assert path.stat().st_uid == peer.uid


def test_the_shim_ignores_and_reports_switches_another_user_made(
    peer: LocalUser, shared: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kill, save = shared / "kill-switch", shared / "save-switch"
    saves: list[int] = []
    plant(peer, kill)
    plant(peer, save)
    caplog.set_level(logging.WARNING, logger="rtool.shim")
    g = Guard(
        saves.append,
        kill_switch=kill,
        save_switch=save,
        signals=(),
        poll_interval=0.05,
        exit=False,
    )
    try:
        g.exit_if_killed()  # returns: not your switch
        assert not g.killed
        for step in range(40):
            d = g.step(step)
            assert not d.stopping and not d.save_requested
            time.sleep(0.01)
        assert saves == []
        text = caplog.text
        assert f"ignoring kill switch {kill}: it is owned by uid {peer.uid}" in text
        assert f"ignoring save switch {save}: it is owned by uid {peer.uid}" in text
        assert text.count("ignoring kill switch") == 1  # reported once, not every poll
        link = shared / "my-link"  # a symlink of yours to their file: still theirs
        link.symlink_to(kill)
        linked = Guard(kill_switch=link, signals=(), start=False)
        assert not linked.killed
        linked.close()
        kill.unlink()
        kill.touch()  # yours: obeyed
        assert g.killed
        for step in range(41, 400):
            d = g.step(step)
            if d.stopping:
                break
            time.sleep(0.01)
        assert (d.reason, d.exit_code) == ("killed", 0)
    finally:
        g.close()


def test_rtool_stop_replaces_another_users_switch_with_yours(
    cli: Cli, peer: LocalUser, shared: Path, tmp_path: Path
) -> None:
    kill = shared / "kill-switch"
    plant(peer, kill)
    cfg = tmp_path / "rtool.toml"
    cfg.write_text("[switches]\ngroup_writable = true\n")
    res = cli("--config", str(cfg), "stop", "--kill-switch", str(kill))
    assert res.code == 0, res.err
    assert kill.stat().st_uid == os.getuid()


def _marker_job(run_dir: Path) -> Path:
    script = run_dir / "marker.py"
    script.write_text("import sys\nopen(sys.argv[1], 'a').write('ran\\n')\n")
    return script


@pytest.mark.slurm
@pytest.mark.timeout(180)
def test_the_batch_script_runs_despite_another_users_kill_switch(
    cli: Cli,
    slurm: Slurm,
    job_name: str,
    peer: LocalUser,
    shared: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    _marker_job(tmp_path)
    kill = shared / "kill-switch"
    args = ["submit", "marker.py", "--python", sys.executable, "--args", str(tmp_path / "ran"),
            "--job-name", job_name, "--kill-switch", str(kill), "--parsable"]  # fmt: skip
    res = cli(*args, "--", "--hold")
    assert res.code == 0, res.err
    assert f"kill switch, {shared}, is group-writable (mode 2775)" in res.err
    job = res.out.strip()
    plant(peer, kill)  # after the submission, before the job starts
    again = cli(*args, "--dry-run")
    assert f"ignoring kill switch {kill}: it is owned by uid {peer.uid}" in again.err
    slurm.release(job)
    out = tmp_path / f"{job_name}-{job}.out"

    def ended() -> bool:
        return all(r.get("JobState") == "COMPLETED" for r in slurm.show_job(job) or [{}])

    wait_for(ended, 120, what="the job to end")
    assert (tmp_path / "ran").read_text() == "ran\n", out.read_text()
    assert f"rtool: ignoring switch {kill}: it is owned by uid {peer.uid}" in out.read_text()


def test_submit_warns_about_world_writable_switch_and_heartbeat_folders(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _marker_job(tmp_path)
    public = tmp_path / "public"
    public.mkdir()
    public.chmod(0o1777)
    res = cli("submit", "marker.py", "--heartbeat", str(public / "hb.json"), "--dry-run")
    assert res.code == 0, res.err
    assert f"heartbeat, {public}, is world-writable (mode 1777)" in res.err
    assert "the kill switch" not in res.err  # the switches' folder (tmp_path) is private


def _preflight_argv(script: str) -> list[str]:
    (line,) = [x for x in script.splitlines() if x.endswith("|| _rtool_pf=$?")]
    return shlex.split(line.split(" || ")[0])


def test_the_preflight_reads_only_the_config_it_was_given(
    cli: Cli, peer: LocalUser, shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(shared)
    _marker_job(shared)
    res = cli("submit", "marker.py", "--gpus-per-node", "8", "--preflight", "--dry-run")
    assert res.code == 0, res.err
    argv = _preflight_argv(res.out)
    assert argv[1:3] == ["--no-config", "preflight"]
    plant(peer, shared / "rtool.toml", '[nodes.preflight]\ncommand = "exit 1"\n')
    smi = fake_smi(tmp_path, "gpus_healthy_8xh100.csv", "ecc_healthy_8xh100.csv")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RTOOL_"))}
    env["RTOOL_NVIDIA_SMI"] = smi
    env.pop("CUDA_VISIBLE_DEVICES", None)
    done = subprocess.run(
        [*argv, "--here"], cwd=shared, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("pre-flight OK"), done.stdout


def test_the_dirs_probe_name_cannot_be_planted(
    peer: LocalUser, shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe child runs as pid 1 of a new pid namespace, so a name built from its pid is
    known in advance: the other user plants a symlink there."""
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    os.chmod(tmp_path, 0o755)
    peer.run(["ln", "-s", str(victim), str(shared / ".rtool-preflight-1")])
    wrapper = tmp_path / "python-pid1"
    wrapper.write_text(f'#!/bin/sh\nexec unshare --pid --fork {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(wrapper))
    assert dirs.probe(str(shared), 1, 30) is None
    assert victim.read_text() == "untouched\n"
    assert sorted(p.name for p in shared.iterdir()) == [".rtool-preflight-1"]  # nothing left


def test_scrontab_installs_go_through_a_private_file(
    peer: LocalUser, shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$TMPDIR is a shared folder; the stand-in scrontab lets the other user try to swap the
    file it is handed before it reads it."""
    record = tmp_path / "installed"
    stand_in = tmp_path / "bin" / "scrontab"
    stand_in.parent.mkdir()
    stand_in.write_text(
        "#!/bin/sh\n"
        'case "$1" in -l|-r) exit 0 ;; esac\n'
        f"runuser -u {peer.name} -- sh -c "
        '\'rm -f "$1" && echo "* * * * * evil" > "$1"\' swap "$1" 2>/dev/null\n'
        f'cat "$1" > {record}\n'
    )
    stand_in.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stand_in.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.setattr("tempfile.tempdir", None)
    state = StateDir(tmp_path / "state")
    block = "# BEGIN rtool cron k\n*/15 * * * * true\n# END rtool cron k\n"
    scron.install(Slurm(), block, "k", state.path)
    assert record.read_text() == block
    assert list(shared.iterdir()) == [] and list(state.path.glob(".rtool-scrontab-*")) == []
