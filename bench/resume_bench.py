"""Benchmark: what resuming from the newest complete checkpoint and recording the attempt's
provenance cost (issue 39).

    python bench/resume_bench.py [--checkpoints 200] [--repeat 15]

Measures, in the same run:
  resume      rtool.shim.latest_checkpoint over N checkpoint folders (the newest half written)
              vs the baseline `get_last_checkpoint`-style pick (list the folder, take the highest
              step), which would pick the half-written one
  provenance  git revision + dirty state of this checkout, the versions of the packages
              imported (after `import torch` when it is installed), in the shim's thread
Prints medians and ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import median_seconds  # noqa: E402
from rtool.shim.checkpoints import find  # noqa: E402
from rtool.shim.provenance import git_version, package_versions  # noqa: E402

STEP = re.compile(r"step_([0-9]+)")


def make(folder: Path, n: int) -> None:
    for s in range(1, n + 1):
        c = folder / f"step_{s:06d}"
        c.mkdir()
        (c / "model.bin").write_bytes(b"x" * 4096)
        (c / "COMPLETE").write_text("")
    half = folder / f"step_{n + 1:06d}"
    half.mkdir()
    (half / "model.bin").write_bytes(b"x" * 1024)  # the save a dying node left


def newest_by_name(folder: Path) -> Path:
    return max(folder.iterdir(), key=lambda p: int(STEP.search(p.name).group(1)))  # type: ignore[union-attr]


def resume(n: int, repeat: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="rtool-bench-resume-"))
    try:
        make(folder, n)
        marker = "{NAME}/COMPLETE"
        got = find(folder, None, (), marker, 50.0, 0.0, None, False).path
        picked = newest_by_name(folder)
        base = median_seconds(lambda: newest_by_name(folder), repeat)
        ours = median_seconds(
            lambda: find(folder, None, (), marker, 50.0, 0.0, None, False), repeat
        )
        print(f"resume, {n} checkpoints: baseline {base * 1000:6.2f} ms picks {picked.name}; "
              f"rtool {ours * 1000:6.2f} ms picks {got.name if got else None}; "
              f"ratio {ours / base:.1f}")  # fmt: skip
    finally:
        shutil.rmtree(folder)


def provenance(repeat: int) -> None:
    with contextlib.suppress(ImportError):
        import torch  # noqa: F401
    script = str(ROOT / "examples" / "train_toy.py")
    git = median_seconds(lambda: git_version(script), repeat)
    pkgs = median_seconds(lambda: package_versions(list(sys.modules)), repeat)
    count = len((package_versions(list(sys.modules)) or "").split())
    print(f"provenance: git {git * 1000:6.1f} ms ({git_version(script)}); packages "
          f"{pkgs * 1000:6.1f} ms ({count} distributions); off the training thread")  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoints", type=int, default=200)
    p.add_argument("--repeat", type=int, default=15)
    args = p.parse_args()
    resume(args.checkpoints, args.repeat)
    provenance(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
