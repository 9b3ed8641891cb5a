"""What a config field says besides its type: its help, how a command line gives it, and where
its default comes from. One declaration serves the config schema, the generated commands, their
help, the docs' reference tables and the tests that compare them (docs/architecture.md).

    class FooWatch(Section):
        path: str = setting(..., "A file or glob to watch.", each=True)
        stale: Duration = setting(30 * 60.0, "Not written for longer -> CRITICAL.")
        pids: list[int] = setting([], "A process to watch (repeatable).", flag="--pid")
        grace: Duration | None = setting(None, "Allowed delay.", default_from="cron.grace")

Required fields are arguments of a generated command unless they have a `flag`; the others are
`--field-name` options. `each`: one entry per value given. `switch=("--no-accounting", "off")`:
a flag without a value that sets that value. `default_from="cron.grace"`: left out, the value
comes from that config key (the help says `(default: [cron] grace, 10m)`). `cli=False`: config
only.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field
from pydantic.fields import FieldInfo

from rtool.core.config.types import Duration, Percent, PositiveDuration, Size
from rtool.core.units import exact_size

_KEY = "rtool"


@dataclass(frozen=True)
class Cli:
    """How a command line gives a field (see the module docstring)."""

    flag: str | None = None
    each: bool = False
    switch: tuple[str, Any] | None = None
    default_from: str | None = None
    cli: bool = True


def setting(
    default: Any = ...,
    help: str = "",
    *,
    flag: str | None = None,
    each: bool = False,
    switch: tuple[str, Any] | None = None,
    default_from: str | None = None,
    cli: bool = True,
    **field: Any,
) -> Any:
    """A pydantic `Field` carrying its help (`description`) and its `Cli` declaration."""
    extra = dataclasses.asdict(Cli(flag, each, None, default_from, cli))
    extra["switch"] = list(switch) if switch else None
    schema: dict[str, Any] = {_KEY: extra}
    if "default_factory" in field:
        return Field(description=help or None, json_schema_extra=schema, **field)
    return Field(default, description=help or None, json_schema_extra=schema, **field)


def cli_of(info: FieldInfo) -> Cli:
    """The field's `Cli` declaration (the defaults for a plain field)."""
    extra = info.json_schema_extra
    raw: Any = extra.get(_KEY) if isinstance(extra, dict) else None
    if not isinstance(raw, dict):
        return Cli()
    switch = raw.get("switch")
    return Cli(
        flag=raw.get("flag"),
        each=bool(raw.get("each")),
        switch=(str(switch[0]), switch[1]) if switch else None,
        default_from=raw.get("default_from"),
        cli=bool(raw.get("cli", True)),
    )


def flag_of(name: str, info: FieldInfo) -> str:
    """The option's flag: its declared one, else `--field-name`."""
    return cli_of(info).flag or "--" + name.replace("_", "-")


_UNITS = {
    id(meta): kind
    for kind, alias in (
        ("duration", Duration),
        ("duration", PositiveDuration),
        ("size", Size),
        ("percent", Percent),
    )
    for meta in typing.get_args(alias)[1:]
}


def unit_of(annotation: Any, metadata: Any = ()) -> str | None:
    """`duration`, `size` or `percent` for a field of those types (optional or not), else None."""
    for meta in metadata:
        if id(meta) in _UNITS:
            return _UNITS[id(meta)]
    if typing.get_origin(annotation) is Annotated:
        args = typing.get_args(annotation)
        return unit_of(args[0], args[1:])
    if _is_union(annotation):
        return next((u for a in typing.get_args(annotation) if (u := unit_of(a))), None)
    return None


def _is_union(annotation: Any) -> bool:
    return isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union


def exact_duration(seconds: float) -> str:
    """A duration as people write it, exactly: `90s`, `30m`, `24h`, `7d`, `1.5s`."""
    if seconds != int(seconds):
        return f"{seconds:g}s"
    s = int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s and s % size == 0 and (unit != "d" or s >= 2 * 86400):
            return f"{s // size}{unit}"
    return f"{s}s"


def shown(value: Any, unit: str | None = None) -> str | None:
    """A value as it is written in the config and on the command line (None: nothing to show)."""
    if value is None or value == [] or value == () or value == {}:
        return None
    if isinstance(value, (list, tuple)):
        return ", ".join(s for v in value if (s := shown(v, unit)) is not None)
    if isinstance(value, bool):
        return "true" if value else "false"
    if unit == "duration":
        return exact_duration(float(value))
    if unit == "size":
        return exact_size(int(value))
    if unit == "percent":
        return f"{float(value):g}%"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def default_of(info: FieldInfo) -> Any:
    """The field's own default (None when it is required or has none)."""
    if info.is_required():
        return None
    return info.get_default(call_default_factory=True)


def shown_default(info: FieldInfo) -> str | None:
    """The field's own default as written (`90%`, `30m`), or None."""
    return shown(default_of(info), unit_of(info.annotation, info.metadata))


def choices(annotation: Any) -> list[str]:
    """The values a `Literal[...]` field (optional or not) accepts, else []."""
    if typing.get_origin(annotation) is typing.Literal:
        return [str(a) for a in typing.get_args(annotation)]
    if _is_union(annotation):
        return [c for a in typing.get_args(annotation) for c in choices(a)]
    return []
