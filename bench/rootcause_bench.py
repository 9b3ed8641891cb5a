"""How finding an attempt's root cause grows with its log tail (issue 37).

    python bench/rootcause_bench.py [--sizes 65536,1048576,8388608]

For each size, three logs of that many bytes are written to a file and read the way the run
ledger reads them (`read_logs`: the bounded tail, the last 5,000 lines up to 4,000 characters
each, then `signatures.match` over every line): *realistic* (healthy training lines from the
corpus, the failure 40 lines before the end), *wide* (2,000-character lines, progress-bar
style, so that every byte of an 8 MiB tail is matched: fewer than 5,000 lines), and *adversarial*
(2,000-character lines that almost match: `NCCL WARN ` / `Watchdog caught` / `[rank3]: ` /
`Traceback` fragments and long runs of one letter). Prints the median time, the time per MiB
matched and the growth exponent between the smallest and the largest size (1.0 linear).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import median_seconds
from rtool.runs import signatures
from rtool.runs.logtail import read_logs

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "runs" / "corpus"
FAIL = (
    "[rank3]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600061 milliseconds before timing out."
)
ALMOST = (
    "n1:1:2 [0] NCCL WARN ",
    "Watchdog caught ",
    "[rank3]: ",
    "Traceback (most recent call ",
    "NVRM: Xid (PCI:",
    "*** JOB 1 ON n1 CANCELLED AT ",
    "a",
    "Error: ",
)


def _lines(kind: str, size: int) -> list[str]:
    if kind == "realistic":
        healthy = [h["line"] for h in json.loads((CORPUS / "healthy.json").read_text())]
        body, n = [], 0
        while n < size:
            line = healthy[len(body) % len(healthy)]
            body.append(line)
            n += len(line) + 1
        return [*body[:-41], FAIL, *["  frame #3: clone + 0x43"] * 40]
    width = 2000
    count = max(1, size // (width + 1))
    if kind == "wide":
        bar = "Epoch 0:   6%|" + "#" * (width - 60) + "| 32040/500150 [6:28:43, 1.37it/s]"
        return [*[bar[:width]] * (count - 1), (bar[: width - len(FAIL)] + FAIL)]
    out = []
    for i in range(count):
        seed = ALMOST[i % len(ALMOST)]
        out.append((seed * (width // len(seed) + 1))[:width])
    return out


def _measure(kind: str, size: int, folder: Path) -> tuple[float, int]:
    path = folder / f"{kind}-{size}.log"
    path.write_text("\n".join(_lines(kind, size)) + "\n")
    os.chmod(path, 0o600)

    def run() -> None:
        got = read_logs(str(path), ("n1",), size)
        assert got is not None
        signatures.match(got[1], "FAILED", nodes=("n1",))

    got = read_logs(str(path), ("n1",), size)
    matched = sum(len(x) + 1 for x in got[1]) if got else 0
    return median_seconds(run, 3), matched


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="65536,1048576,8388608")
    sizes = [int(s) for s in p.parse_args().sizes.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="rtool-rootcause-"))
    print(f"{len(signatures.DEFAULTS)} signatures; median of 3 runs")
    print(f"{'log':>12} {'size':>9} | {'matched':>9} {'seconds':>8} {'s/MiB':>7}")
    for kind in ("realistic", "wide", "adversarial"):
        rows = []
        for size in sizes:
            t, matched = _measure(kind, size, folder)
            rows.append((matched, t))
            per = t / max(matched, 1) * (1 << 20)
            print(f"{kind:>12} {size:>9} | {matched:>9} {t:>8.3f} {per:>7.3f}")
        (m0, t0), (m1, t1) = rows[0], rows[-1]
        if m1 > m0:
            print(
                f"{kind:>12} growth exponent (time vs bytes matched): "
                f"{math.log(t1 / t0) / math.log(m1 / m0):.2f}"
            )
    for f in folder.iterdir():
        f.unlink()
    folder.rmdir()


if __name__ == "__main__":
    main()
