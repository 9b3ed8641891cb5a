"""Items 1, 3, 4 of issue 16: config files, templates, raw batch lines, switches and cron job
files another user could have written are refused, on real files with real owners and modes."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rtool.app.plumbing.appconfig import load_config
from rtool.core.slurm import Slurm
from rtool.core.state import StateDir
from rtool.cron.jobs import scan
from rtool.cron.tick import TickEnv, tick
from rtool.slurm_templates.renderer import TemplateError, render
from tests.cron.conftest import CronSetup, make_cron  # noqa: F401  (fixture)
from tests.hardening.conftest import OTHER_UID, no_traceback

# -- 1. config files ----------------------------------------------------------------------------


def _config(path: Path, text: str = '[slurm]\ntimeout = "10s"\n', mode: int = 0o644) -> Path:
    path.write_text(text)
    os.chmod(path, mode)
    return path


@pytest.mark.parametrize("explicit", [True, False], ids=["--config", "./rtool.toml"])
def test_config_owned_by_another_user_is_refused(cli: Any, workdir: Path, explicit: bool) -> None:
    cfg = _config(workdir / "rtool.toml")
    args = ["--config", str(cfg)] if explicit else []
    assert cli(*args, "config", "check").code == 0  # yours (root's here): fine
    os.chown(cfg, OTHER_UID, -1)
    res = cli(*args, "config", "check")
    assert res.code == 2 and f"owned by uid {OTHER_UID}" in res.err
    no_traceback(res.err)
    watch = cli(*args, "watch", "disk", str(workdir))
    assert watch.code == 3 and f"owned by uid {OTHER_UID}" in watch.err


@pytest.mark.parametrize(("mode", "who"), [(0o664, "group"), (0o646, "others"), (0o666, "group")])
def test_config_writable_by_group_or_others_is_refused(
    cli: Any, workdir: Path, mode: int, who: str
) -> None:
    _config(workdir / "rtool.toml", mode=mode)
    res = cli("config", "show")
    assert res.code == 2 and f"writable by {who}" in res.err and "chmod go-w" in res.err
    no_traceback(res.err)


def test_config_symlink_to_a_trusted_file_owned_by_another_user_is_refused(
    cli: Any, workdir: Path, tmp_path: Path
) -> None:
    target = _config(tmp_path / "real.toml")
    link = workdir / "rtool.toml"
    link.symlink_to(target)
    assert cli("config", "check").code == 0
    os.lchown(link, OTHER_UID, -1)
    res = cli("config", "check")
    assert res.code == 2 and "owned by uid" in res.err


# -- 1. templates and raw batch lines -----------------------------------------------------------


def test_templates_render_sandboxed(tmp_path: Path) -> None:
    d = tmp_path / "templates"
    d.mkdir()
    marker = tmp_path / "pwned"
    (d / "evil.j2").write_text(
        "{{ cycler.__init__.__globals__.os.system('touch " + str(marker) + "') }}\n"
    )
    (d / "mro.j2").write_text("{{ ''.__class__.__mro__[1].__subclasses__() }}\n")
    for name in ("evil.j2", "mro.j2"):
        with pytest.raises(TemplateError, match=r"unsafe|undefined|attribute"):
            render(name, (str(d),))
    assert not marker.exists()


def test_group_writable_template_folder_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "templates"
    d.mkdir()
    (d / "ok.j2").write_text("#!/bin/bash\n")
    assert render("ok.j2", (str(d),)) == "#!/bin/bash\n"
    os.chmod(d, 0o775)
    with pytest.raises(TemplateError, match=r"refusing template folder .* group"):
        render("ok.j2", (str(d),))


@pytest.mark.parametrize(
    "line",
    [
        "#SBATCH --qos=high ; touch /tmp/x",
        "#SBATCH qos=high",
        "#SBATCH --qos='unclosed",
        "#SBATCH --Qos=high",
    ],
)
def test_raw_extra_batch_lines_are_checked(cli: Any, workdir: Path, line: str) -> None:
    (workdir / "train.py").write_text("print('hi')\n")
    (workdir / "rtool.toml").write_text("[submit]\nextra_lines = [" + _toml_str(line) + "]\n")
    res = cli("submit", "train.py", "--dry-run")
    assert res.code in (1, 2) and "extra #SBATCH line" in res.err, res.err
    no_traceback(res.err)


def _toml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# -- 3. kill and save switches ------------------------------------------------------------------


def test_switch_is_private_by_default(cli: Any, workdir: Path) -> None:
    old = os.umask(0o002)  # a permissive umask must not make the switch group-writable
    try:
        res = cli("stop", "--kill-switch", "runs/a/kill")
    finally:
        os.umask(old)
    assert res.code == 0, res.err
    assert stat.S_IMODE((workdir / "runs/a/kill").stat().st_mode) == 0o644
    assert stat.S_IMODE((workdir / "runs").stat().st_mode) == 0o755


def test_switch_symlink_is_never_followed(cli: Any, workdir: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"  # e.g. another user's file the switch name points to
    (workdir / "kill-switch").symlink_to(victim)
    res = cli("stop", "--kill-switch", "kill-switch")
    assert res.code == 1 and "symlink" in res.err and not victim.exists()
    victim.write_text("keep me")
    old = victim.stat().st_mtime_ns
    time.sleep(0.01)
    assert cli("save", "--save-switch", str(workdir / "kill-switch")).code == 1
    assert victim.read_text() == "keep me" and victim.stat().st_mtime_ns == old
    no_traceback(res.err)


def test_switch_fifo_is_refused_without_hanging(cli: Any, workdir: Path) -> None:
    os.mkfifo(workdir / "kill-switch")
    start = time.monotonic()
    res = cli("stop", "--kill-switch", "kill-switch")
    assert res.code == 1 and "not a regular file" in res.err
    assert time.monotonic() - start < 10


def test_switch_folder_of_another_user_is_refused(cli: Any, workdir: Path) -> None:
    other = workdir / "other"
    other.mkdir()
    os.chown(other, OTHER_UID, -1)
    res = cli("stop", "--kill-switch", "other/kill")
    assert res.code == 1 and f"owned by uid {OTHER_UID}" in res.err
    assert not (other / "kill").exists()


def test_group_writable_switch_folder_needs_the_setting(cli: Any, workdir: Path) -> None:
    shared = workdir / "shared"
    shared.mkdir()
    os.chmod(shared, 0o2775)
    res = cli("stop", "--kill-switch", "shared/kill")
    assert res.code == 1 and "group_writable" in res.err
    _config(workdir / "team.toml", "[switches]\ngroup_writable = true\n")
    ok = cli("--config", "team.toml", "stop", "--kill-switch", "shared/kill")
    assert ok.code == 0 and stat.S_IMODE((shared / "kill").stat().st_mode) == 0o664
    os.chmod(shared, 0o1777)  # world-writable: refused even when the group may write
    bad = cli("--config", "team.toml", "save", "--save-switch", "shared/save")
    assert bad.code == 1 and "writable by everyone" in bad.err


# -- 4. cron job files --------------------------------------------------------------------------


def _job(path: Path, marker: Path) -> Path:
    path.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    path.chmod(0o755)
    return path


def test_cron_scan_skips_untrusted_job_files(tmp_path: Path) -> None:
    root = tmp_path / "cron"
    for sub in ("cron.hourly", "cron.daily", "cron.d"):
        (root / sub).mkdir(parents=True)
    marker = tmp_path / "ran"
    _job(root / "cron.hourly" / "mine.sh", marker)
    os.chown(_job(root / "cron.hourly" / "theirs.sh", marker), OTHER_UID, -1)
    _job(root / "cron.hourly" / "groupw.sh", marker).chmod(0o775)
    (root / "cron.daily" / "job.slurm").write_text("#!/bin/bash\ntrue\n")
    (root / "cron.daily" / "job.slurm").chmod(0o666)
    (root / "cron.d" / "lines").write_text(f"* * * * * touch {marker}\n")
    os.chown(root / "cron.d" / "lines", OTHER_UID, -1)
    found = scan(root)
    assert [j.name for j in found.jobs] == ["cron.hourly/mine.sh"]
    why = {r.name: r.why for r in found.refused}
    assert f"owned by uid {OTHER_UID}" in why["cron.hourly/theirs.sh"]
    assert "writable by group" in why["cron.hourly/groupw.sh"]
    assert "writable by group and others" in why["cron.daily/job.slurm"]
    assert f"owned by uid {OTHER_UID}" in why["cron.d/lines"]


@pytest.mark.slurm
def test_cron_tick_alerts_about_a_refused_job_and_does_not_run_it(
    make_cron: Callable[..., CronSetup],  # noqa: F811
    slurm: Slurm,
    tmp_path: Path,
) -> None:
    c = make_cron(hourly="2s")
    marker = tmp_path / "ran"
    os.chown(_job(c.root / "cron.hourly" / "theirs.sh", marker), OTHER_UID, -1)
    env = TickEnv(load_config(c.config), StateDir(c.state), slurm, c.root, c.config)
    report = tick(env)
    time.sleep(2.1)
    report2 = tick(env)
    keys = {a.key: a for a in report.alerts + report2.alerts}
    alert = keys["cron:cron.hourly/theirs.sh"]
    assert alert.status.name == "CRITICAL" and "not run" in alert.summary
    assert f"owned by uid {OTHER_UID}" in c.alerts.read_text()
    assert not marker.exists()


def test_tee_and_log_channel_files_are_never_followed_through_a_symlink(
    cli: Any, workdir: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (workdir / "train.log").symlink_to(victim)
    (workdir / "alerts.log").symlink_to(victim)
    _config(
        workdir / "c.toml",
        f'[state]\ndir = "{tmp_path / "s"}"\n[notify.log]\npath = "alerts.log"\n',
    )
    res = cli("--config", "c.toml", "watch", "disk", str(workdir), "--max-used", "0.001%",
              "--tee", "train.log")  # fmt: skip
    no_traceback(res.err)
    assert "DISK CRITICAL" in res.out and victim.read_text() == "keep\n"
    assert res.code == 2 and "symbolic link" in res.err  # told; the verdict stays CRITICAL
