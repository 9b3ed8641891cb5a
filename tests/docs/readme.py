"""The shell examples of README.md, as data: each ```bash block split into the commands a
reader would type (continuation lines joined, a here-document kept with its command), each
```console block into its commands and the output shown for them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
_FENCE = re.compile(r"^```(\w*)\s*$")
_HEREDOC = re.compile(r"<<-?\s*'?\"?(\w+)'?\"?")


@dataclass(frozen=True)
class Example:
    command: str  # as a shell reads it (may span lines: a here-document)
    line: int  # where it starts in README.md
    #: The output the README shows for it (```console blocks), else None.
    output: str | None = None


def blocks(text: str) -> list[tuple[str, int, list[str]]]:
    """(language, first line number, lines) of every fenced block."""
    out: list[tuple[str, int, list[str]]] = []
    lang: str | None = None
    body: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if m and lang is None:
            lang, body, start = m.group(1), [], number + 1
        elif line.strip() == "```" and lang is not None:
            out.append((lang, start, body))
            lang = None
        elif lang is not None:
            body.append(line)
    return out


def bash_commands(lines: list[str], start: int) -> list[Example]:
    """The commands of a ```bash block: `\\` continuations joined, here-documents kept."""
    out: list[Example] = []
    i = 0
    while i < len(lines):
        first, text = i, lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i].strip()
        m = _HEREDOC.search(text)
        if m:
            while i + 1 < len(lines) and lines[i].strip() != m.group(1):
                i += 1
                text += "\n" + lines[i]
        i += 1
        if text.strip() and not text.lstrip().startswith("#"):
            out.append(Example(text.strip(), start + first))
    return out


def console_commands(lines: list[str], start: int) -> list[Example]:
    """`$ command` lines of a ```console block, each with the output lines after it."""
    out: list[Example] = []
    for number, line in enumerate(lines):
        if line.startswith("$ "):
            rest = lines[number + 1 :]
            end = next((k for k, ln in enumerate(rest) if ln.startswith("$ ")), len(rest))
            shown = "\n".join(rest[:end]).strip("\n")
            out.append(Example(line[2:].strip(), start + number, shown + "\n"))
    return out


def examples(path: Path = README) -> list[Example]:
    """Every shell example of the README, in its order."""
    out: list[Example] = []
    for lang, start, lines in blocks(path.read_text()):
        if lang in ("bash", "sh", "shell"):
            out += bash_commands(lines, start)
        elif lang == "console":
            out += console_commands(lines, start)
    return out
