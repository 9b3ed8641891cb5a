"""Finding, loading and validating the one TOML config.

Search order: `--config PATH`, `$RTOOL_CONFIG`, `./rtool.toml`, `~/.config/rtool/rtool.toml`;
with none, built-in defaults. Every error is reported at once with its key path and line.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rtool.core.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel

    M = TypeVar("M", bound=BaseModel)

__all__ = ["find_config_path", "format_errors", "load_config", "load_config_text", "redacted"]


def _toml() -> Any:
    """tomllib (tomli before 3.11), imported when a config file is read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


def find_config_path(explicit: str | Path | None = None) -> Path | None:
    """The config file to use, or None for built-in defaults."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("RTOOL_CONFIG")
    if env:
        return Path(env).expanduser()
    for candidate in (Path("rtool.toml"), Path.home() / ".config" / "rtool" / "rtool.toml"):
        if candidate.is_file():
            return candidate
    return None


def load_config(schema: type[M], path: str | Path | None = None) -> M:
    """Load the config at `path` (or the one found by the search order) into `schema`.

    The core knows no feature section: the application passes the assembled schema in.
    """
    found = find_config_path(path)
    if found is None:
        return schema()
    return load_config_text(schema, read_trusted_config(found), str(found))


def read_trusted_config(found: Path) -> str:
    """The text of a config file that only its owner (the user or root) can have written.

    A config decides where alerts go, which templates render and which lines reach a batch
    script: one written by another user (a shared working folder's `./rtool.toml`) is refused.
    """
    from rtool.core.safeio import UnsafeFileError, check_trusted, read_bytes_bounded

    try:
        check_trusted(found, "config file")
        raw = read_bytes_bounded(found, 1024 * 1024)
        return raw.decode("utf-8")  # TOML is UTF-8: a latin-1 file is refused, not misread
    except UnicodeDecodeError as exc:
        where = f"byte 0x{raw[exc.start]:02x} at offset {exc.start}"
        raise ConfigError([f"not UTF-8 ({where}); TOML files are UTF-8"], str(found)) from None
    except FileNotFoundError:
        raise ConfigError(
            ["cannot read config file: No such file or directory"], str(found)
        ) from None
    except OSError as exc:
        raise ConfigError([f"cannot read config file: {exc.strerror}"], str(found)) from None
    except UnsafeFileError as exc:
        raise ConfigError([str(exc)], str(found)) from None


def load_config_text(schema: type[M], text: str, source: str = "<config>") -> M:
    from pydantic import ValidationError

    depth = _nesting(text)
    if depth > MAX_NESTING:
        raise ConfigError([f"nested {depth} levels deep (at most {MAX_NESTING})"], source)
    try:
        data = _toml().loads(text)
    except _toml().TOMLDecodeError as exc:
        raise ConfigError([f"not valid TOML: {exc}"], source) from None
    except RecursionError:
        raise ConfigError([f"nested too deeply (at most {MAX_NESTING} levels)"], source) from None
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_errors(exc, text), source) from None


#: Arrays and inline tables nested deeper than this are refused (no config needs 5).
MAX_NESTING = 32


def _nesting(text: str) -> int:
    """The deepest nesting of `[`/`{` in `text` outside strings and comments (an upper bound:
    table headers count as one level)."""
    depth = deepest = 0
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote[0] == '"':
                i += 1
            elif text.startswith(quote, i):
                i += len(quote) - 1
                quote = ""
        elif c in "\"'":
            quote = c * 3 if text.startswith(c * 3, i) else c
            i += len(quote) - 1
        elif c == "#":
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return deepest


def format_errors(exc: Any, text: str) -> list[str]:
    """One line per error: `notify.email.port (line 7): Input should be a valid integer`.

    The offending value is never echoed: it might be a secret pasted in the wrong place.
    """
    problems = []
    for err in exc.errors(include_input=False, include_url=False):
        loc = [str(p) for p in err["loc"]]
        key = ".".join(loc) or "(top level)"
        line = _line_of(text, loc)
        where = f" (line {line})" if line else ""
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        problems.append(f"{key}{where}: {msg}")
    return problems


def _line_of(text: str, loc: list[str]) -> int | None:
    """Best-effort line number of the key at `loc` in TOML `text`."""
    lines = text.splitlines()
    table_keys = [p for p in loc if not p.isdigit()]
    for split in range(len(table_keys) - 1, -1, -1):
        table, rest = table_keys[:split], table_keys[split:]
        start = _table_start(lines, table)
        if start is None:
            continue
        dotted = ".".join(rest)
        key_re = re.compile(rf"^\s*{re.escape(dotted)}\s*=")
        for i in range(start, len(lines)):
            if i > start and lines[i].lstrip().startswith("[") and table:
                break
            if key_re.match(lines[i]):
                return i + 1
        header = _table_start(lines, table_keys[: split + 1]) if rest else None
        if header is not None:
            return header
    return None


def _table_start(lines: list[str], table: list[str]) -> int | None:
    if not table:
        return 0
    name = ".".join(table)
    header = re.compile(rf"^\s*\[\[?\s*{re.escape(name)}\s*\]\]?\s*(#.*)?$")
    for i, line in enumerate(lines):
        if header.match(line):
            return i
    return None


def redacted(config: BaseModel) -> dict[str, Any]:
    """The effective config as plain data. Secrets are only ever named, never stored; any field
    whose name says it holds a secret value (not the name of its env var or file) is masked."""
    from rtool.core.redact import redact_data

    data = config.model_dump(mode="json")
    return redact_data(_mask(data))  # also tokens inside URLs (webhook paths, query strings)


_SECRETISH = re.compile(r"(password|token|secret|webhook_url)$")


def _mask(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: ("***" if _SECRETISH.search(k) and v else _mask(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_mask(v) for v in obj]
    return obj
