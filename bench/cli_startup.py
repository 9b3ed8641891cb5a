"""Start-up of the `rtool` command against bare one-command typer apps, side by side.

    python bench/cli_startup.py [--repeat 15] [--mounts 10]

Measures, in the same run, whole processes run in turn (A B A B ...), each the median of
`--repeat` runs, and the median of the pairwise ratios (wall time and CPU time, the CPU
time including the processes each one started):
  disk  `rtool watch disk M1..M10 --no-notify` over ten mounts (tmpfs when root, else folders)
        vs a bare one-command typer app that statvfs the same ten paths and prints a line each
        (target: at most 1.5x), and how many processes `rtool watch disk` starts (target: 1)
  help  `rtool --help` vs a bare one-command typer app's `--help` (target: at most 1.1x)
The bare apps are written by this script into a temp folder. Both sides run with bytecode
caching on, as an installed rtool has (pip compiles it): PYTHONDONTWRITEBYTECODE is dropped
from their environment and warm-up runs write the caches. No config file, a fresh state dir.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BARE_DISK = '''
import os
import typer

app = typer.Typer()


@app.command()
def disk(paths: list[str]) -> None:
    """statvfs each path and print one line."""
    for p in paths:
        st = os.statvfs(p)
        used = (st.f_blocks - st.f_bfree) * st.f_frsize
        pct = 100.0 * used / max(1, used + st.f_bavail * st.f_frsize)
        typer.echo(f"DISK OK - {p} {pct:.0f}% used")


if __name__ == "__main__":
    app()
'''

BARE_HELP = '''
import typer

app = typer.Typer()


@app.command()
def hello(name: str, count: int = 1) -> None:
    """Say hello."""
    for _ in range(count):
        typer.echo(name)


if __name__ == "__main__":
    app()
'''

#: Runs `rtool ARGS` in-process and reports on stderr how many processes it started.
COUNT_CHILDREN = """
import subprocess, sys
started = []
real = subprocess.Popen._execute_child
def counting(self, args, *rest, **kw):
    started.append(args)
    return real(self, args, *rest, **kw)
subprocess.Popen._execute_child = counting
from rtool.app.cli import main
code = main(sys.argv[1:])
print(f"children={len(started)}", file=sys.stderr)
sys.exit(code)
"""


@contextlib.contextmanager
def mounts(base: Path, n: int) -> Iterator[list[str]]:
    paths = []
    for i in range(n):
        p = base / f"m{i}"
        p.mkdir()
        if os.geteuid() == 0:
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=10M", "tmpfs", str(p)], check=True)
        paths.append(str(p))
    try:
        yield paths
    finally:
        if os.geteuid() == 0:
            for p in paths:
                subprocess.run(["umount", "-l", p], check=False)


def run_once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of it and its children) of one run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    res = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        err = res.stderr.decode(errors="replace").strip()[-300:]
        raise SystemExit(f"{' '.join(argv[:4])}... exited {res.returncode}: {err}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def compare(
    a: list[str], b: list[str], env: dict[str, str], cwd: Path, repeat: int
) -> dict[str, float]:
    """A and B in turn; medians of each and of the pairwise ratios."""
    for _ in range(2):  # warm-up: bytecode caches, page cache
        run_once(a, env, cwd)
        run_once(b, env, cwd)
    runs_a, runs_b = [], []
    for _ in range(repeat):
        runs_a.append(run_once(a, env, cwd))
        runs_b.append(run_once(b, env, cwd))
    out = {}
    for i, what in enumerate(("wall", "cpu")):
        out[f"a_{what}"] = statistics.median(r[i] for r in runs_a)
        out[f"b_{what}"] = statistics.median(r[i] for r in runs_b)
        out[f"ratio_{what}"] = statistics.median(
            x[i] / y[i] for x, y in zip(runs_a, runs_b, strict=True) if y[i] > 0
        )
    return out


def children_started(args: list[str], env: dict[str, str], cwd: Path) -> int:
    res = subprocess.run(
        [sys.executable, "-c", COUNT_CHILDREN, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    for line in res.stderr.splitlines():
        if line.startswith("children="):
            return int(line.split("=")[1])
    raise SystemExit(f"could not count the children: {res.stderr.strip()[-300:]}")


def line(label: str, r: dict[str, float], target: float) -> str:
    return (
        f"{label:<44} {r['a_wall'] * 1000:7.1f} ms vs {r['b_wall'] * 1000:7.1f} ms wall"
        f"   ratio wall {r['ratio_wall']:4.2f}  cpu {r['ratio_cpu']:4.2f}  (target <= {target:g})"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--mounts", type=int, default=10)
    args = ap.parse_args()
    rtool = str(Path(sys.executable).with_name("rtool"))
    with tempfile.TemporaryDirectory(prefix="rtool-bench-") as tmp:
        base = Path(tmp)
        (base / "bare_disk.py").write_text(textwrap.dedent(BARE_DISK))
        (base / "bare_help.py").write_text(textwrap.dedent(BARE_HELP))
        env = {k: v for k, v in os.environ.items() if not k.startswith("RTOOL_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["XDG_STATE_HOME"] = str(base / "state")
        env["HOME"] = str(base)  # no ~/.config/rtool/rtool.toml
        with mounts(base, args.mounts) as paths:
            watch = ["watch", "disk", *paths, "--no-notify"]
            disk = compare(
                [rtool, *watch],
                [sys.executable, str(base / "bare_disk.py"), *paths],
                env,
                base,
                args.repeat,
            )
            children = children_started(watch, env, base)
        help_ = compare(
            [rtool, "--help"],
            [sys.executable, str(base / "bare_help.py"), "--help"],
            env,
            base,
            args.repeat,
        )
    print(line(f"rtool watch disk ({args.mounts} mounts) vs bare app", disk, 1.5))
    print(f"{'processes started by rtool watch disk':<44} {children}  (target 1: one probe child)")
    print(line("rtool --help vs a bare typer app's --help", help_, 1.1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
