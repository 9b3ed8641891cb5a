"""Existing sbatch scripts given to `rtool submit`: split into header and body, read and
override their `#SBATCH` options (pure functions of text)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from rtool.slurm_templates.specs import SpecError

#: Short sbatch options rtool may override, by their long names.
SHORT = {
    "J": "job-name",
    "t": "time",
    "p": "partition",
    "A": "account",
    "q": "qos",
    "o": "output",
    "a": "array",
    "N": "nodes",
    "x": "exclude",
    "d": "dependency",
    "b": "begin",
    "D": "chdir",
}
_SHELLS = re.compile(r"^#!\s*(?:/usr)?/bin/(?:env\s+)?(?:bash|sh)(?:\s.*)?$")


@dataclass
class BatchScript:
    header: list[str]  # comment and #SBATCH lines before the first command (no shebang)
    body: str  # everything from the first command on
    options: dict[str, str | None] = field(default_factory=dict)  # long name -> value


def parse_batch_script(text: str, what: str = "batch script") -> BatchScript:
    """Split a bash batch script; `#SBATCH` lines are read up to the first command (as sbatch)."""
    lines = text.splitlines()
    if lines and lines[0].startswith("#!"):
        if not _SHELLS.match(lines[0].strip()):
            raise SpecError(f"{what}: only bash or sh batch scripts can be wrapped ({lines[0]})")
        lines = lines[1:]
    n = 0
    while n < len(lines) and (not lines[n].strip() or lines[n].lstrip().startswith("#")):
        n += 1
    options = dict(filter(None, map(sbatch_option, lines[:n])))
    return BatchScript(header=lines[:n], body="\n".join(lines[n:]), options=options)


def sbatch_option(line: str) -> tuple[str, str | None] | None:
    """`#SBATCH --time=1:00:00` -> ("time", "1:00:00"); `#SBATCH -J x` -> ("job-name", "x")."""
    if not line.startswith("#SBATCH"):
        return None
    try:
        words = shlex.split(line[len("#SBATCH") :], comments=True)
    except ValueError:
        words = line[len("#SBATCH") :].split()
    if not words or not words[0].startswith("-"):
        return None
    first = words[0]
    if first.startswith("--"):
        name, eq, value = first[2:].partition("=")
        return name, value if eq else (words[1] if len(words) > 1 else None)
    letter, rest = first[1:2], first[2:]
    name = SHORT.get(letter, letter)
    return name, rest.lstrip("=") if rest else (words[1] if len(words) > 1 else None)


def override(header: list[str], options: set[str]) -> list[str]:
    """Comment out the user's `#SBATCH` lines for options that rtool sets itself."""
    if options & {"requeue", "no-requeue"}:  # either one sets both
        options = options | {"requeue", "no-requeue"}
    return [
        f"# rtool overrides: {line[1:]}" if (p := sbatch_option(line)) and p[0] in options else line
        for line in header
    ]
