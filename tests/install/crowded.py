"""A crowded environment for the installed rtool (issue 24), built once per test module.

- The wheel is built from a copy of this checkout (rtool/, pyproject.toml, README.md) with the
  test environment's setuptools, offline (`--no-build-isolation --no-index`).
- A fresh venv (no pip of its own; this pip installs into it with `--python`) gets a stand-in
  package that owns the top-level import name `notify` (built and installed as a real wheel,
  before rtool), then rtool's wheel, NOT editable. rtool's dependencies are not downloaded
  again: a `.pth` file appends this environment's site-packages to the END of the venv's
  sys.path (a folder named by a `.pth` is not a site dir, so this environment's editable rtool
  finder is never installed there: `rtool` can only come from the wheel).
- A work folder holds `rtool.py`, `nodes.py`, `notify.py`, `runs.py`, `cron.py`,
  `watchdogs.py` and `json.py`; each leaves `<name>.py.imported` when imported.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Modules in the work folder: rtool's own name, its parts' old top-level names, a stdlib name.
SHADOWS = ("rtool", "nodes", "notify", "runs", "cron", "watchdogs", "json")
MARKER = 'open(__file__ + ".imported", "w").close()\n'
STANDIN = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=64"]\n'
    'build-backend = "setuptools.build_meta"\n'
    '[project]\nname = "notify-standin"\nversion = "1.0"\n'
    '[tool.setuptools]\npackages = ["notify"]\n',
    "notify/__init__.py": '"""Another project\'s package named notify."""\nOWNER = "standin"\n',
    "notify/config.py": "SETTING = 42\n",
}


@dataclass(frozen=True)
class Crowded:
    venv: Path
    work: Path
    wheel: Path

    @property
    def rtool(self) -> Path:
        return self.venv / "bin" / "rtool"

    @property
    def site(self) -> Path:
        return next((self.venv / "lib").glob("python3*/site-packages"))

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a user whose venv is activated (no PYTHONPATH games)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env.update(PATH=f"{self.venv / 'bin'}:{os.environ['PATH']}", VIRTUAL_ENV=str(self.venv))
        env.update(extra)
        return env

    def run(
        self, *argv: str | Path, timeout: float = 120, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        """Run a command in the work folder, as the user would type it there."""
        return subprocess.run(
            [str(a) for a in argv],
            cwd=self.work,
            env=self.env(**extra),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def imported(self) -> list[str]:
        """The work folder's modules that something imported (should be none)."""
        return sorted(p.name for p in self.work.glob("*.py.imported"))

    def damaged(self, dist: str) -> list[str]:
        """Files of installed distribution `dist` (its RECORD) that are missing or changed."""
        record = next(self.site.glob(f"{dist.replace('-', '_')}-*.dist-info")) / "RECORD"
        bad = []
        for path, digest, _ in csv.reader(record.read_text().splitlines()):
            if not digest:
                continue
            algo, _, want = digest.partition("=")
            data = (self.site / path).read_bytes() if (self.site / path).exists() else None
            got = hashlib.new(algo, data).digest() if data is not None else b""
            if base64.urlsafe_b64encode(got).rstrip(b"=").decode() != want:
                bad.append(path)
        return bad

    def owned(self, dist: str) -> set[str]:
        """The top-level names distribution `dist` installed into site-packages."""
        record = next(self.site.glob(f"{dist.replace('-', '_')}-*.dist-info")) / "RECORD"
        return {row[0].split("/")[0] for row in csv.reader(record.read_text().splitlines())}


def pip(*args: str | Path) -> None:
    """This environment's pip, offline."""
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *map(str, args)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, f"{' '.join(cmd)}:\n{res.stdout}\n{res.stderr}"


def build_wheel(src: Path, out: Path) -> Path:
    pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", out, src)
    wheels = sorted(out.glob("*.whl"), key=lambda p: p.stat().st_mtime)
    return wheels[-1]


def rtool_source(base: Path) -> Path:
    """A copy of what the wheel is built from (the checkout stays free of build output)."""
    src = base / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(ROOT / "rtool", src / "rtool", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    return src


def standin_source(base: Path) -> Path:
    src = base / "standin"
    for rel, text in STANDIN.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    return src


def make(base: Path) -> Crowded:
    """Build both wheels, the venv with the stand-in then rtool, and the work folder."""
    dist = base / "dist"
    standin = build_wheel(standin_source(base), base / "standin-dist")
    wheel = build_wheel(rtool_source(base), dist)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    for w in (standin, wheel):  # the other package first: rtool must not overwrite it
        pip("--python", py, "install", "--no-deps", "--no-index", "-q", w)
    crowded = Crowded(venv, base / "work", wheel)
    # this environment's site-packages, and those it reaches through a .pth of its own (a venv
    # layered on another one), in its order
    paths = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *sys.path]
    deps = dict.fromkeys(p for p in paths if p.endswith("site-packages"))
    (crowded.site / "zz_rtool_test_deps.pth").write_text("".join(f"{d}\n" for d in deps))
    crowded.work.mkdir()
    for name in SHADOWS:
        (crowded.work / f"{name}.py").write_text(MARKER)
    return crowded
