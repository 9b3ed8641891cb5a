"""Pydantic field types shared by every config section, and secret resolution."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, PlainSerializer

from rtool.core.errors import SecretError
from rtool.core.redact import register_secret
from rtool.core.safeio import UnsafeFileError, read_bounded
from rtool.core.units import (
    UnitError,
    exact_duration,
    exact_percent,
    exact_size,
    parse_duration,
    parse_percent,
    parse_size,
)


def _wrap(parse: Any) -> Any:
    def validator(value: Any) -> Any:
        try:
            return parse(value)
        except UnitError as exc:
            raise ValueError(str(exc)) from None

    return validator


#: Seconds, written `90s`, `30m`, `4h`, `7d` (a bare number is seconds).
Duration = Annotated[
    float, BeforeValidator(_wrap(parse_duration)), PlainSerializer(exact_duration, return_type=str)
]


def _positive(value: float) -> float:
    if value <= 0:
        raise ValueError("must be a positive duration such as 30s (0 would never wait)")
    return value


#: A duration that must be more than zero (timeouts, intervals).
PositiveDuration = Annotated[
    float,
    BeforeValidator(_wrap(parse_duration)),
    AfterValidator(_positive),
    PlainSerializer(exact_duration, return_type=str),
]
#: Bytes, written `500GiB`, `5TiB`, `1.5TB`.
Size = Annotated[
    int, BeforeValidator(_wrap(parse_size)), PlainSerializer(exact_size, return_type=str)
]
#: Percent 0-100, written `80%`.
Percent = Annotated[
    float,
    BeforeValidator(_wrap(parse_percent)),
    PlainSerializer(exact_percent, return_type=str),
]


class Section(BaseModel):
    """Base of every config section: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", validate_default=True, defer_build=True)


def resolve_secret(env: str | None, file: str | None, what: str) -> str | None:
    """Read a secret from the environment variable `env` or the private file `file` (None when
    neither is set). Never puts the secret itself in an error message."""
    if env:
        value = os.environ.get(env)
        if value:
            register_secret(value)
            return value
        if not file:
            raise SecretError(f"{what}: environment variable {env} is not set (or empty)")
    if file:
        path = Path(file).expanduser()
        try:
            st = path.stat()
        except OSError as exc:
            raise SecretError(f"{what}: cannot read secret file {path}: {exc.strerror}") from None
        if st.st_uid != os.getuid():
            raise SecretError(
                f"{what}: secret file {path} is owned by uid {st.st_uid}, not by you; "
                "keep your secrets in a file of your own (chmod 600)"
            )
        if stat.S_IMODE(st.st_mode) & 0o077:
            raise SecretError(
                f"{what}: secret file {path} is readable by others "
                f"(mode {stat.S_IMODE(st.st_mode):04o}); run: chmod 600 {path}"
            )
        try:
            value = read_bounded(path, 64 * 1024).strip()
        except (OSError, UnsafeFileError) as exc:
            raise SecretError(f"{what}: cannot read secret file {path}: {exc}") from None
        register_secret(value)
        return value
    return None
