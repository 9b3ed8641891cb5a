"""Expected errors. The CLI prints them as one line (no traceback) and maps them to exit codes."""

from __future__ import annotations


class RtoolError(Exception):
    """An expected failure: printed as one line, exit code 1."""

    exit_code = 1


class UsageError(RtoolError):
    """Bad command-line input: exit code 2."""

    exit_code = 2


class ConfigError(RtoolError):
    """A broken config file: one problem is one line, several are listed; exit code 2."""

    exit_code = 2

    def __init__(self, problems: list[str], source: str | None = None) -> None:
        self.problems = problems
        self.source = source
        where = f" in {source}" if source else ""
        if len(problems) == 1:
            super().__init__(f"config error{where}: {problems[0]}")
            return
        lines = [f"{len(problems)} config error(s){where}:"] + [f"  {p}" for p in problems]
        super().__init__("\n".join(lines))


class SecretError(ConfigError):
    """A secret that cannot be read, or a secret file that others can read."""

    def __init__(self, message: str) -> None:
        super().__init__([message])
