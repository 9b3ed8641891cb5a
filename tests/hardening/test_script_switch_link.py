"""Issue 36's leftover: the batch script's own kill-switch check resolves the path one
component at a time, so a symlink another user planted at a folder above the switch (pointing
at a folder of yours that holds a switch of yours) is caught by the script, not only by the
shim. Your own links still count."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from devtools.localslurm.users import LocalUser, shared_folder
from rtool.core.slurm import Slurm
from tests.conftest import CliResult
from tests.helpers import wait_for

Cli = Callable[..., CliResult]
PRELUDE = Path(__file__).parents[2] / "rtool/slurm_templates/_rtool_prelude.j2"


def _check(switch: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The prelude's two switch functions, run in bash on `switch`."""
    text = PRELUDE.read_text()
    start = text.index("_rtool_switch_path() {")
    end = text.index('if _rtool_switch_set "$RTOOL_KILL_SWITCH"')
    script = text[start:end] + '_rtool_switch_set "$1" && echo set || echo unset\n'
    return subprocess.run(
        ["bash", "-c", script, "check", str(switch)],
        cwd=cwd, capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip


def test_your_own_links_above_and_at_the_switch_still_count(tmp_path: Path) -> None:
    real = tmp_path / "old-run" / "sub"
    real.mkdir(parents=True)
    (real / "KILL").write_text("")
    (tmp_path / "link").symlink_to("old-run")
    (real / "up").symlink_to("../sub")
    (tmp_path / "switch").symlink_to(tmp_path / "link/sub/KILL")
    for path in ("link/sub/KILL", "link/sub/up/./KILL", "switch", "old-run/../link/sub/KILL"):
        got = _check(Path(path), tmp_path)
        assert got.stdout == "set\n", (path, got.stderr)
        assert got.stderr == ""
    assert _check(Path("link/sub/absent"), tmp_path).stdout == "unset\n"


@pytest.fixture
def shared(peer: LocalUser) -> Iterator[Path]:
    d = shared_folder(peer)
    yield d
    subprocess.run(["rm", "-rf", "--", str(d)], check=False)


def test_a_link_another_user_planted_above_the_switch_is_ignored_by_bash(
    peer: LocalUser, shared: Path, tmp_path: Path
) -> None:
    (tmp_path / "old-run").mkdir()
    (tmp_path / "old-run" / "kill-switch").write_text("")  # yours, from an older run
    tmp_path.chmod(0o755)
    peer.run(["ln", "-s", str(tmp_path / "old-run"), str(shared / "runs")])
    got = _check(shared / "runs" / "kill-switch", tmp_path)
    assert got.stdout == "unset\n"
    assert got.stderr == (
        f"rtool: ignoring switch {shared}/runs/kill-switch: {shared}/runs is a symlink owned "
        f"by uid {peer.uid}, not by you or root\n"
    )


@pytest.mark.slurm
@pytest.mark.timeout(180)
def test_the_batch_script_runs_despite_a_link_planted_above_its_kill_switch(
    cli: Cli,
    slurm: Slurm,
    job_name: str,
    peer: LocalUser,
    shared: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    tmp_path.chmod(0o755)
    (tmp_path / "marker.py").write_text("import sys\nopen(sys.argv[1], 'a').write('ran\\n')\n")
    (tmp_path / "old-run").mkdir()
    kill = shared / "runs" / "kill-switch"
    args = ["submit", "marker.py", "--python", sys.executable, "--args", str(tmp_path / "ran"),
            "--job-name", job_name, "--kill-switch", str(kill), "--parsable"]  # fmt: skip
    res = cli(*args, "--", "--hold")
    assert res.code == 0, res.err
    job = res.out.strip()
    # after the submission: your old run's switch, and their link to its folder
    (tmp_path / "old-run" / "kill-switch").write_text("")
    peer.run(["ln", "-s", str(tmp_path / "old-run"), str(shared / "runs")])
    slurm.release(job)
    out = tmp_path / f"{job_name}-{job}.out"

    def ended() -> bool:
        return all(r.get("JobState") == "COMPLETED" for r in slurm.show_job(job) or [{}])

    wait_for(ended, 120, what="the job to end")
    text = out.read_text()
    assert (tmp_path / "ran").read_text() == "ran\n", text
    assert (
        f"rtool: ignoring switch {kill}: {shared}/runs is a symlink owned by uid {peer.uid}, "
        "not by you or root"
    ) in text
