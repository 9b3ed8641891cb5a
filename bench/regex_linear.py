"""How the cost of redaction and of rtool's patterns grows with the text (issue 25, finding 5).

    python bench/regex_linear.py [--sizes 65536,262144,1048576]

For each size: `redact()` on adversarial lines (the shapes that were quadratic: long runs of
letters, `a-a-a-`, `://a/` repeated, `?a` repeated, a 40 kB line ending in `password=`), and
the slowest of every pattern rtool runs (tests/hardening/regexes.py finds them) on its worst
attack, each as a ratio to a baseline measured in the same run: `re.sub` of one literal character
over the same text (a plain linear scan). Then the growth exponent between the smallest and the
largest size: 1.0 is linear, 2.0 quadratic.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import median_seconds
from rtool.core import redact
from tests.hardening.regexes import all_patterns, attacks

SHAPES = ["a", "a-", "://a/", "?a", "https://a/", "password", "x"]


def _text(seed: str, size: int) -> str:
    return (seed * (size // len(seed) + 1))[:size]


def _redact_all(size: int) -> float:
    texts = [_text(s, size) for s in SHAPES] + [_text("x", size - 9) + "password="]

    def run() -> None:
        for t in texts:
            redact._cache.clear()
            redact.redact(t)

    return median_seconds(run, 3)


def _baseline(size: int, count: int) -> float:
    plain = re.compile("\x00")
    text = _text("a", size)
    return median_seconds(lambda: [plain.subn("", text) for _ in range(count)], 3)


def _patterns(size: int, worst: dict[str, str]) -> float:
    compiled = [(re.compile(t, f), worst[w]) for (t, f), w in all_patterns().items()]
    return median_seconds(lambda: [p.subn("", _text(a, size)) for p, a in compiled], 1)


def _worst(rx: re.Pattern[str]) -> str:
    def cost(attack: str) -> float:
        return median_seconds(lambda: rx.subn("", attack), 1)

    return max(attacks(rx, 16384), key=cost)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="65536,262144,1048576")
    sizes = [int(s) for s in p.parse_args().sizes.split(",")]
    pats = all_patterns()
    worst: dict[str, str] = {}
    for (text, flags), where in pats.items():  # each pattern's worst attack at 16 KiB
        worst[where] = _worst(re.compile(text, flags))
    print(f"{len(pats)} patterns; baseline = re.sub of one literal over the same text")
    head = f"{'redact 8 lines':>14} {'x base':>7} | {'all patterns':>12} {'x base':>7}"
    print(f"{'size':>9} | {head}")
    rows = []
    for size in sizes:
        r, a = _redact_all(size), _patterns(size, worst)
        b8, bn = _baseline(size, 8), _baseline(size, len(pats))
        rows.append((size, r, a))
        print(f"{size:>9} | {r:>13.3f}s {r / b8:>7.1f} | {a:>11.3f}s {a / bn:>7.1f}")
    (s0, r0, a0), (s1, r1, a1) = rows[0], rows[-1]
    grow = math.log(s1 / s0)
    redact_exp, pattern_exp = math.log(r1 / r0) / grow, math.log(a1 / a0) / grow
    print(f"growth exponent: redact {redact_exp:.2f}, patterns {pattern_exp:.2f}")


if __name__ == "__main__":
    main()
