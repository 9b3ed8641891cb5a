"""Issue 24: rtool installed (the real wheel, not editable) into a venv it shares with another
package that owns `notify`, run from a folder full of modules named like rtool's parts and the
standard library. Nothing may be imported from that folder, and the other package's files stay
as they were. The pre-flight runs exactly as the rendered batch script runs it (on the login
node and inside a real Slurm job), and a real cron tick runs in that folder on the local cluster.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import rtool
from rtool.core.slurm import Slurm
from rtool.core.state import StateDir
from rtool.cron.store import CronStore
from tests.helpers import wait_for
from tests.install.crowded import ROOT, Crowded, make


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Crowded:
    return make(tmp_path_factory.mktemp("crowded"))


@pytest.fixture
def user(crowded: Crowded, tmp_path: Path) -> Iterator[Crowded]:
    """The crowded venv and folder, with a config in the folder (where users keep it) and this
    test's own state dir; afterwards nothing was imported from the folder and the other
    package is intact."""
    for old in crowded.work.glob("*.py.imported"):
        old.unlink()
    scratch = tmp_path / "scratch"
    (crowded.work / "rtool.toml").write_text(
        f'[state]\ndir = "{tmp_path / "state"}"\n'
        f'[nodes.preflight]\ndirs = ["{scratch}"]\nmin_free = "1KiB"\ncheck_timeout = "20s"\n'
        f'[cron]\ndir = "{crowded.work}"\ngrace = "30s"\n[cron.periods]\nhourly = "3s"\n'
    )
    yield crowded
    assert crowded.imported() == [], "imported from the folder it ran in"
    assert crowded.damaged("notify-standin") == [], "rtool's install changed another package"


def ok(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 0, f"exit {res.returncode}\n{res.stdout}\n{res.stderr}"
    assert "Traceback" not in res.stderr, res.stderr
    return res.stdout


def test_the_wheel_owns_only_rtool_and_carries_its_templates(user: Crowded) -> None:
    dist_info = f"rtool_slurm-{rtool.__version__}.dist-info"
    assert user.owned("rtool-slurm") == {"rtool", dist_info, ".."}  # ..: bin/rtool
    shipped = {p.name for p in (user.site / "rtool" / "slurm_templates").iterdir()}
    assert {"training.slurm.j2", "_rtool_prelude.j2", "_rtool_self_check.j2"} <= shipped
    assert (user.site / "rtool" / "cron" / "examples" / "rtool-watch.cron").is_file()
    other = user.run(
        user.venv / "bin" / "python",
        "-I",
        "-c",
        "import notify.config as c, notify; print(notify.OWNER, c.SETTING)",
    )
    assert ok(other).split() == ["standin", "42"]


#: The tooling (devtools/: local Slurm harness, fake servers, the demo) never ships: neither
#: under its own name nor where it lived before (rtool/testing, rtool/app/demo, rtool demo).
TOOLING_PATHS = ("devtools/", "rtool/testing/", "rtool/app/demo/", "rtool/app/commands/demo_cmd")
#: A name each part of the tooling defines, and no installed module does.
TOOLING_MARKERS = ("class SlackLikeServer", "def fail_node", "scrontab_client", "def run_demo")


def test_the_wheel_holds_no_tooling(crowded: Crowded) -> None:
    with zipfile.ZipFile(crowded.wheel) as wheel:
        names = wheel.namelist()
        sources = {n: wheel.read(n).decode() for n in names if n.endswith(".py")}
    assert [n for n in names if n.startswith(TOOLING_PATHS) or n.endswith(".c")] == []
    checkout = {p.relative_to(ROOT).as_posix() for p in (ROOT / "rtool").rglob("*.py")}
    assert set(sources) == checkout  # rtool/'s modules, nothing else
    found = [(n, m) for n, text in sources.items() for m in TOOLING_MARKERS if m in text]
    assert found == []


def test_the_development_install_does_not_expose_the_tooling(tmp_path: Path) -> None:
    """This environment's `pip install -e .` maps rtool only: out of the checkout (and with
    PYTHON* ignored) devtools is not importable."""
    code = "import rtool, devtools"
    res = subprocess.run(
        [sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True
    )
    assert res.returncode == 1, res.stderr
    assert res.stderr.splitlines()[-1] == "ModuleNotFoundError: No module named 'devtools'"


def test_the_installed_cli_has_no_demo(user: Crowded) -> None:
    commands = ok(user.run("rtool", "--help")).split("Commands", 1)[1]
    listed = re.findall(r"^│ (\w+) ", commands, re.MULTILINE)
    assert "submit" in listed and "demo" not in listed, commands
    res = user.run("rtool", "demo")
    assert res.returncode == 2 and res.stderr.strip() == (
        "rtool: No such command 'demo'. (see 'rtool --help')"
    ), res.stderr


def test_version_and_watch_disk_in_the_crowded_folder(user: Crowded) -> None:
    out = ok(user.run("rtool", "--version"))
    assert out.strip() == (
        f"rtool {rtool.__version__} from {user.site / 'rtool'} "
        f"(Python {'.'.join(map(str, __import__('sys').version_info[:3]))})"
    )
    disk = user.run("rtool", "watch", "disk", ".", "--max-used", "100%", "--no-notify")
    assert ok(disk).startswith("DISK OK - .")
    shown = ok(user.run("rtool", "config", "show"))
    assert shown.startswith(f"# rtool {rtool.__version__}: effective config from ")


def _preflight_line(script: str) -> str:
    """The batch script's pre-flight command line, as rendered."""
    lines = [ln for ln in script.splitlines() if ln.endswith("|| _rtool_pf=$?")]
    assert len(lines) == 1, script
    return lines[0]


def test_preflight_as_the_batch_script_runs_it(user: Crowded) -> None:
    (user.work / "train.py").write_text('print("trained")\n')
    script = ok(user.run("rtool", "submit", "train.py", "--time", "5:00", "--dry-run"))
    line = _preflight_line(script)
    assert shlex.split(line)[0] == str(user.rtool)  # the console script, by its absolute path
    res = user.run("bash", "-c", f"_rtool_pf=0\n{line}\necho exit=$_rtool_pf")
    assert res.stdout.splitlines()[0].startswith("pre-flight OK"), res.stdout + res.stderr
    assert res.stdout.splitlines()[-1] == "exit=0"


def _finished(slurm: Slurm, job_id: str) -> str | None:
    states = {r.state for r in slurm.sacct(job_ids=[job_id]) if r.job_id == job_id}
    return next((s for s in states if s not in ("PENDING", "RUNNING", "REQUEUED")), None)


@pytest.mark.slurm
def test_preflight_and_training_in_a_slurm_job(user: Crowded, slurm: Slurm, job_name: str) -> None:
    """Submitted for real: the batch script, the pre-flight on the node (`python -I -m
    rtool.nodes.preflight` through srun) and the training run in the crowded folder."""
    (user.work / "train.py").write_text('print("trained")\n')
    res = user.run(
        "rtool",
        "submit",
        "train.py",
        "--job-name",
        job_name,
        "--time",
        "5:00",
        "--parsable",
        "--keep-suspects",
    )
    job_id = ok(res).strip()
    state = wait_for(lambda: _finished(slurm, job_id), timeout=120, what=f"job {job_id} to end")
    log = (user.work / f"{job_name}-{job_id}.out").read_text()
    assert state == "COMPLETED", log
    assert re.search(r"rtool: pre-flight n\d: ok \(dirs\)", log) and "trained" in log, log


@pytest.mark.slurm
def test_cron_tick_in_the_crowded_cron_root(user: Crowded, slurm: Slurm, tmp_path: Path) -> None:
    """`rtool cron start` queues the scheduler job; its ticks run on a node with the crowded
    folder as the cron root, each queueing the next with the console script's path."""
    ok(user.run("rtool", "cron", "init", str(user.work)))
    ok(user.run("rtool", "cron", "start"))
    try:
        store = CronStore(StateDir(tmp_path / "state"), user.work)
        wait_for(lambda: len(store.read_ticks()) >= 2, timeout=120, what="two cron ticks")
    finally:
        ok(user.run("rtool", "cron", "stop"))
    logs = "".join(p.read_text() for p in (user.work / "logs").glob("scheduler.*.log"))
    assert "Traceback" not in logs and "Error" not in logs, logs
