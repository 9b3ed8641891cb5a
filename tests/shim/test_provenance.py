"""Attempt provenance: the shim records the script's git revision and dirty state, the versions
of the packages the training imported and a hash of the files on its command line; `rtool
history` and the timeline flag what changed between two attempts."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from rtool.core.heartbeat import Heartbeat, read_heartbeat
from rtool.runs import provenance
from rtool.runs.beats import apply_heartbeat
from rtool.runs.model import Attempt, Ledger
from rtool.runs.render import table
from rtool.runs.totals import totals
from rtool.shim.provenance import git_version, input_hashes, package_versions
from tests.shim.conftest import TOY, toy_env


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "HOME": str(repo)}
    env |= {"GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_git_version_names_the_revision_and_whether_the_checkout_is_dirty(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    assert git_version(str(script)) is None  # not in a repository
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "train.py")
    _git(tmp_path, "commit", "-qm", "first")
    rev = _git(tmp_path, "rev-parse", "HEAD")[:12]
    assert git_version(str(script)) == f"{rev} (clean)"
    script.write_text("print(2)\n")
    assert git_version(str(script)) == f"{rev} (dirty)"


def test_packages_and_inputs(tmp_path: Path) -> None:
    import psutil

    text = package_versions(["psutil", "json", "os.path", "_private"])
    assert text == f"psutil=={psutil.__version__}"
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("lr: 0.1\n")
    first = input_hashes(["--config", str(cfg), "--steps", "10", f"--other={cfg}"])
    assert first is not None and first.startswith("cfg.yaml sha256:")
    assert first.count("cfg.yaml") == 2
    cfg.write_text("lr: 0.2\n")
    assert input_hashes(["--config", str(cfg)]) != first.split("; ")[0]


def _fake_package(site: Path, version: str) -> None:
    """An installed distribution `fakelib` of `version` (its dist-info and its module)."""
    for old in site.glob("fakelib-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    (site / "fakelib").mkdir(parents=True, exist_ok=True)
    (site / "fakelib" / "__init__.py").write_text(f"__version__ = {version!r}\n")
    info = site / f"fakelib-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakelib\nVersion: {version}\n")
    (info / "top_level.txt").write_text("fakelib\n")


def _attempt(tmp: Path, number: int, site: Path, cfg: Path) -> Attempt:
    """One attempt of the toy (a real process with the real shim); its heartbeat's record."""
    hb_path = tmp / "heartbeat.json"
    env = toy_env(tmp, RTOOL_HEARTBEAT=str(hb_path), PYTHONPATH=str(site))
    args = ["--steps", str(30 * number), "--step-seconds", "0.05", "--config", str(cfg)]
    out = subprocess.run(
        [sys.executable, str(TOY), *args, "--import", "fakelib"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    hb = read_heartbeat(hb_path)
    assert isinstance(hb, Heartbeat)
    base = Attempt(run="toy", number=number, job_id=str(number), started=time.time() - 5)
    return apply_heartbeat(base.with_(state="COMPLETED", ended=time.time()), hb)


def test_a_package_upgraded_and_a_config_edited_between_attempts_are_flagged(
    tmp_path: Path,
) -> None:
    site, cfg = tmp_path / "site", tmp_path / "cfg.yaml"
    _fake_package(site, "1.0")
    cfg.write_text("lr: 0.1\n")
    a1 = _attempt(tmp_path, 1, site, cfg)
    assert a1.packages is not None and "fakelib==1.0" in a1.packages.split(), a1.packages
    assert a1.inputs is not None and a1.inputs.startswith("cfg.yaml sha256:"), a1.inputs
    assert a1.code_version is not None and a1.code_version.endswith(("(clean)", "(dirty)"))
    _fake_package(site, "1.1")
    cfg.write_text("lr: 0.2\n")
    a2 = _attempt(tmp_path, 2, site, cfg)
    led = Ledger(run="toy", attempts=[a1, a2])
    assert provenance.changed(led.attempts) == {2: (1, ["fakelib 1.0 -> 1.1", "cfg.yaml edited"])}
    text = table(led, totals(led, time.time()), time.time())
    assert "     ↳ changed since attempt 1: fakelib 1.0 -> 1.1; cfg.yaml edited\n" in text
    # the same code, packages and inputs again: nothing flagged
    a3 = _attempt(tmp_path, 3, site, cfg)
    assert 3 not in provenance.changed([a1, a2, a3])


def test_changes_read_code_and_packages() -> None:
    def att(n: int, **kw: str) -> Attempt:
        return Attempt(run="r", number=n, job_id=str(n), **kw)  # type: ignore[arg-type]

    a = att(1, code_version="aaaa (clean)", packages="numpy==1.0 torch==2.12.0")
    b = att(2, code_version="bbbb (dirty)", packages="torch==2.13.0 triton==3.0")
    c = att(3)  # recorded nothing (an older shim): compared with nothing
    d = att(4, code_version="bbbb (clean)", packages="torch==2.13.0 triton==3.0")
    got = provenance.changed([a, b, c, d])
    code = ["code aaaa -> bbbb", "checkout dirty"]
    assert got[2] == (1, [*code, "torch 2.12.0 -> 2.13.0", "triton 3.0 new", "numpy gone"])
    assert got[4] == (2, ["checkout clean again"]) and 3 not in got
