"""`rtool cron install --backend scrontab|jobs|auto` on real local Slurm clusters: one of this
module's own with `ScronParameters=enable` (the entry is stored and scheduled by slurmctld and
a tick really runs from it), and the session's cluster, where scrontab is disabled.

On 24.11 the release's own `scrontab` command runs; on 22.05 (Debian ships none) the client
devtools/localslurm/scrontab_client.c, built with gcc."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.localslurm import control, releases
from devtools.localslurm.scrontab import ScrontabBuildError, command
from rtool.core.errors import UsageError
from rtool.core.slurm import Slurm
from rtool.core.state import StateDir
from rtool.cron import scron
from rtool.cron.chain import active_jobs
from rtool.cron.config import CronConfig
from rtool.cron.store import CronStore, chain_key, chain_name
from tests.helpers import private_cluster, wait_for


@pytest.fixture(scope="module")
def scrontab_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        found = command(releases.get(), tmp_path_factory.mktemp("scrontab-bin"))
    except ScrontabBuildError as exc:
        pytest.fail(f"no scrontab command: {exc}", pytrace=False)
    if releases.get().source is not None:  # 24.11: the real command, already first on PATH
        assert found.parent in releases.get().bindirs
    return found


@pytest.fixture(scope="module")
def scron_cluster() -> Iterator[control.Cluster]:
    """A one-node cluster (no accounting) whose admin enabled scrontab."""
    shape = {"nodes": 1, "accounting": False, "extra": ["ScronParameters=enable"]}
    with private_cluster("rtool-scron-", "local Slurm with scrontab", **shape) as cluster:
        yield cluster


@pytest.fixture
def on_path(scrontab_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", f"{scrontab_bin.parent}{os.pathsep}{os.environ['PATH']}")
    return scrontab_bin


def scrontab(binary: Path, *args: str, text: str | None = None) -> str:
    if text is not None:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
            fh.write(text)
        args = (*args, fh.name)
    res = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def cron_dir(cli, tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "crondir"
    assert cli("cron", "init", str(root)).code == 0
    cfg = tmp_path / "rtool.toml"
    cfg.write_text('[cron]\ntick = "1m"\n')
    return root.resolve(), cfg


@pytest.mark.slurm
@pytest.mark.timeout(240)
def test_scrontab_backend_end_to_end(cli, tmp_path, monkeypatch, scron_cluster, on_path) -> None:
    monkeypatch.setenv("SLURM_CONF", str(scron_cluster.conf))
    scrontab(on_path, text="# mine\n30 4 * * * echo mine\n")  # the user's own entry stays
    try:
        root, cfg = cron_dir(cli, tmp_path)
        r = cli("--config", str(cfg), "cron", "install", "--dir", str(root))  # auto
        assert r.code == 0, r.err
        lines = r.out.splitlines()
        assert lines[0] == "auto: scrontab (ScronParameters=enable and scrontab -l answers)"
        assert lines[-1].startswith(f"scrontab entry installed for {root}")
        assert cli("--config", str(cfg), "cron", "install", "--dir", str(root),
                   "--backend", "scrontab").code == 0  # fmt: skip
        text = scrontab(on_path, "-l")
        begin, end = scron.markers(chain_key(root))
        assert text.count(begin) == 1 and text.count(end) == 1  # replaced, not added twice
        assert "# mine\n30 4 * * * echo mine\n" in text
        entry = next(line for line in text.splitlines() if "--no-chain" in line)
        assert entry.startswith("* * * * * SLURM_CONF=") and f"--dir {root}" in entry
        name = chain_name(root)
        jobs = [j for j in Slurm().squeue(names=[name]) if j.state == "PENDING"]
        assert len(jobs) == 1, jobs  # one cron job, pending until its minute
        assert "CronJob=Yes" in Slurm().scontrol("show", "job", jobs[0].job_id)

        # slurmctld starts the tick at the next minute; the tick queues nothing itself
        store = CronStore(StateDir(), root)
        wait_for(lambda: (store.read_heartbeat() or {}).get("time"), 100, 1, "a tick")
        r = cli("--config", str(cfg), "watch", "cron", "--dir", str(root), "--no-notify")
        assert r.code == 0 and "chain queued" in r.out, r.out
        wait_for(lambda: [j for j in Slurm().squeue(names=[name]) if j.state == "PENDING"],
                 30, 0.5, "the cron job pending again")  # fmt: skip
        assert len(active_jobs(Slurm().squeue(names=[name]), name)) == 1  # no second chain

        # back to the self-perpetuating jobs: the entry goes, the user's line stays
        r = cli("--config", str(cfg), "cron", "install", "--dir", str(root), "--backend", "jobs")
        assert r.code == 0 and r.out.startswith(f"removed the scrontab entry of {root}"), r.out
        assert "cron chain started" in r.out
        assert scrontab(on_path, "-l") == "# mine\n30 4 * * * echo mine\n"
        r = cli("--config", str(cfg), "cron", "uninstall", "--dir", str(root))
        assert r.code == 0 and r.out.startswith("cancelled ")
        wait_for(lambda: not active_jobs(Slurm().squeue(names=[name]), name), 30, 0.5, "cancel")
    finally:
        scrontab(on_path, "-r")


@pytest.mark.slurm
def test_disabled_cluster_keeps_the_jobs(cli, tmp_path, slurm_cluster, on_path) -> None:
    root, cfg = cron_dir(cli, tmp_path)
    r = cli("--config", str(cfg), "cron", "install", "--dir", str(root), "--backend", "scrontab")
    assert r.code == 1 and r.err.count("\n") == 1, r.err
    assert r.err == (
        "rtool: cannot use scrontab: scrontab is disabled on this cluster (ScronParameters); "
        "use --backend jobs or auto\n"
    )
    r = cli("--config", str(cfg), "cron", "install", "--dir", str(root), "--backend", "auto")
    assert r.code == 0, r.err
    assert r.out.startswith("auto: self-perpetuating jobs (scrontab is disabled on this cluster")
    assert "cron chain started" in r.out
    assert any(j.state == "PENDING" for j in Slurm().squeue(names=[chain_name(root)]))
    res = subprocess.run([str(on_path), "-l"], capture_output=True, text=True, timeout=30)
    assert res.returncode == 1 and "scrontab is disabled on this cluster" in res.stderr
    assert cli("cron", "uninstall", "--dir", str(root)).code == 0


def test_without_the_client_auto_keeps_the_jobs(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # Debian's slurm-client has no scrontab
    assert not scron.detect(Slurm()).usable
    assert scron.detect(Slurm()).reason == "the scrontab command is not installed"


@pytest.mark.parametrize(
    ("tick", "spec"),
    [("1m", "* * * * *"), ("15m", "*/15 * * * *"), ("1h", "0 * * * *"), ("2h", "0 */2 * * *")],
)
def test_tick_period_as_crontab_time(tick: str, spec: str) -> None:
    assert scron.cron_spec(CronConfig(tick=tick)) == spec


def test_daily_tick_and_impossible_periods() -> None:
    assert scron.cron_spec(CronConfig(tick="1d", daily_at="03:30")) == "30 3 * * *"
    for tick in ("7m", "90m", "2d"):
        with pytest.raises(UsageError, match="cannot be a crontab line"):
            scron.cron_spec(CronConfig(tick=tick))


def test_only_this_folders_block_is_replaced() -> None:
    a, b = scron.markers("aaaa"), scron.markers("bbbb")
    text = f"# mine\n{a[0]}\n* * * * * x\n{a[1]}\n{b[0]}\n0 * * * * y\n{b[1]}\n"
    assert scron.without(text, "aaaa") == f"# mine\n{b[0]}\n0 * * * * y\n{b[1]}\n"
    assert scron.without("", "aaaa") == ""


def test_scron_lines_take_odd_names_and_refuse_whitespace_and_line_breaks(
    tmp_path: Path,
) -> None:
    """Issue 36: scrontab splits #SCRON lines at whitespace and knows no quoting (24.11's own
    command, tried: `"--chdir=/a b"` is an invalid option), so a cron folder path with a space
    is refused with one line rather than cut in two; quotes, `#`, `,` and backslashes pass as
    they are; a line break (which would add a crontab line) is refused in every value."""
    cfg = CronConfig(tick="15m", partition="debug")
    root = tmp_path / 'my"cron"#1,a\\b'
    lines = scron.block(cfg, root, "rtool-cron-x", "x").splitlines()
    assert lines[2] == f"#SCRON --chdir={root}"
    assert lines[4] == "#SCRON --partition=debug"
    assert lines[5].startswith("*/15 * * * * ") and len(lines) == 7
    with pytest.raises(UsageError, match="holds whitespace: scrontab cannot take it"):
        scron.block(cfg, tmp_path / "my cron", "rtool-cron-x", "x")
    bad = tmp_path / "a\n* * * * * rm -rf ~"
    with pytest.raises(UsageError, match="holds a line break: it cannot be written"):
        scron.block(cfg, bad, "rtool-cron-x", "x")
    with pytest.raises(UsageError, match="holds a line break"):
        scron.block(CronConfig(tick="15m", account="a\nb"), root, "n", "x")
