"""Finding, loading and validating the config: one or more TOML files merged in layers.

Without `--config`/`$RTOOL_CONFIG`: the user's `~/.config/rtool/rtool.toml`, then the
project's `./rtool.toml`, later keys winning, arrays of tables extended (`layers.py`); with
none, built-in defaults. Every error is reported at once with its key path, file and line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from rtool.core.config.layers import Layer, Layered, config_files, locate
from rtool.core.errors import ConfigError
from rtool.core.redact import MASK  # what `config show` prints for a secret
from rtool.core.safeio import UnsafeFileError, check_trusted, open_regular, read_fd

if TYPE_CHECKING:
    from pydantic import BaseModel

    M = TypeVar("M", bound=BaseModel)

__all__ = [
    "Layered",
    "config_files",
    "find_config_path",
    "format_errors",
    "load_config",
    "load_config_text",
    "load_layers",
]


def _toml() -> Any:
    """tomllib (tomli before 3.11), imported when a config file is read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


def find_config_path(explicit: str | Path | None = None) -> Path | None:
    """The last (winning) config file that would be read, or None for built-in defaults.
    `config_files` gives every layer."""
    files = config_files([explicit] if explicit else ())
    return files[-1] if files else None


def load_config(schema: type[M], path: str | Path | Sequence[str | Path] | None = None) -> M:
    """Load the config file(s) at `path` (or the layers found: `config_files`) into `schema`.

    The core knows no feature section: the application passes the assembled schema in.
    """
    given = [path] if isinstance(path, (str, Path)) else list(path or ())
    files = config_files(given)
    if not files:
        return schema()
    return load_layers(schema, files)[0]


def load_layers(schema: type[M], files: Sequence[Path]) -> tuple[M, Layered]:
    """Read every file (each must be trusted), merge them in order, validate the result."""
    layered = Layered()
    problems: list[str] = []
    for path in files:
        try:
            layered.add(read_layer(path))
        except ConfigError as exc:
            problems += [f"{path}: {p}" if len(files) > 1 else p for p in exc.problems]
    if problems:
        raise ConfigError(problems, _names(files) if len(files) == 1 else None)
    return validate_layered(schema, layered), layered


def read_layer(path: Path) -> Layer:
    """One config file, trusted and parsed (ConfigError naming the problem)."""
    text = read_trusted_config(path)
    return Layer(path, text, _parse(text, str(path)))


def _parse(text: str, source: str) -> dict[str, Any]:
    depth = _nesting(text)
    if depth > MAX_NESTING:
        raise ConfigError([f"nested {depth} levels deep (at most {MAX_NESTING})"], source)
    try:
        data: dict[str, Any] = _toml().loads(text)
    except _toml().TOMLDecodeError as exc:
        raise ConfigError([f"not valid TOML: {exc}"], source) from None
    except RecursionError:
        raise ConfigError([f"nested too deeply (at most {MAX_NESTING} levels)"], source) from None
    return data


def _names(files: Sequence[Path]) -> str:
    return ", ".join(str(f) for f in files)


def read_trusted_config(found: Path) -> str:
    """The text of a config file that only its owner (the user or root) can have written: a
    config decides where alerts go and what reaches a batch script, so another user's (a shared
    folder's `./rtool.toml`) is refused. Judged on the descriptor that is then read."""
    try:
        raw = _read_checked_config(found)
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


def _read_checked_config(found: Path) -> bytes:
    fd, st = open_regular(found)
    try:
        check_trusted(found, "config file", st)
        return read_fd(fd, str(found), 1024 * 1024)
    finally:
        os.close(fd)


def load_config_text(schema: type[M], text: str, source: str = "<config>") -> M:
    layered = Layered()
    layered.add(Layer(Path(source), text, _parse(text, source)))
    return validate_layered(schema, layered)


def validate_layered(schema: type[M], layered: Layered) -> M:
    """The merged data validated into `schema`; every problem at once, with where it is."""
    source = _names([layer.path for layer in layered.layers]) or None
    masked = _masked(layered, layered.data, ())
    try:
        model = schema.model_validate(layered.data)
    except ValidationError as exc:
        raise ConfigError(masked + format_errors(exc, layered), source) from None
    if masked:
        raise ConfigError(masked, source)
    return model


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


def format_errors(exc: Any, layered: Layered) -> list[str]:
    """One line per error: `notify.email.port (line 7): Input should be a valid integer`
    (`(FILE:7)` when several files were merged). The offending value is never echoed: it might
    be a secret pasted in the wrong place."""
    problems = []
    for err in exc.errors(include_input=False, include_url=False):
        loc = tuple(err["loc"])
        key = ".".join(str(p) for p in loc) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        problems.append(f"{key}{_where(layered, loc)}: {msg}")
    return problems


def _where(layered: Layered, loc: tuple[Any, ...]) -> str:
    if len(layered.layers) == 1:
        line = locate(layered.layers[0].text, loc)
        return f" (line {line})" if line else ""
    origin = layered.origin(loc)
    return f" ({origin})" if origin.file else ""


def _masked(layered: Layered, obj: Any, at: tuple[Any, ...]) -> list[str]:
    """A masked value copied back from `rtool config show` is never taken for the secret."""
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _masked(layered, v, (*at, k))]
    if isinstance(obj, list):
        return [p for n, v in enumerate(obj) for p in _masked(layered, v, (*at, n))]
    if isinstance(obj, str) and MASK in obj:
        key = ".".join(str(p) for p in at)
        return [
            f"{key}{_where(layered, at)}: holds a masked value ({MASK}), as `rtool config show` "
            "prints secrets: write the real value, or name the env var or 0600 file holding it"
        ]
    return []
