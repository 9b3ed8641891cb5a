"""`rtool config check`: resolve every secret the config names, before an alert needs it.

By the naming rule every section follows, a secret `X` is named by `X_env` (an environment
variable) and/or `X_file` (a file only you can read), and a key ending in `url` holds a URL: a
new channel (or any section) that follows it is checked with no code of its own. The variable
must be set, the file yours, 0600 and not empty, a URL well-formed http(s). Secrets never
appear in a problem's text.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from rtool.core.config.types import resolve_secret
from rtool.core.errors import SecretError

if TYPE_CHECKING:
    from pydantic import BaseModel


def problems(model: BaseModel, at: str = "") -> list[str]:
    """Every secret and URL problem in `model` and the sections inside it, one line each."""
    out: list[str] = []
    fields = type(model).model_fields
    bases = sorted({n[: -len(s)] for n in fields for s in ("_env", "_file") if n.endswith(s)})
    for base in bases:
        env, file = getattr(model, f"{base}_env", None), getattr(model, f"{base}_file", None)
        if env or file:
            out += _secret(env, file, f"{at}{base}")
    for name in fields:
        value = getattr(model, name)
        if name.endswith("url") and isinstance(value, str) and value:
            out += _url(value, f"{at}{name}")
        out += _inside(value, f"{at}{name}")
    return out


def _inside(value: Any, at: str) -> list[str]:
    if hasattr(type(value), "model_fields"):
        return problems(value, f"{at}.")
    if isinstance(value, list):
        return [p for n, v in enumerate(value) for p in _inside(v, f"{at}.{n}")]
    return []


def _secret(env: str | None, file: str | None, base: str) -> list[str]:
    """Problems of the secret `base`, each naming the key that names it (`..._env`/`_file`)."""
    from_env = bool(env and os.environ.get(env))
    what = f"{base}_env" if from_env or not file else f"{base}_file"
    try:
        value = resolve_secret(env, file, what)
    except SecretError as exc:
        return list(exc.problems)
    if not value:
        return [f"{what}: the secret file {file} is empty"]
    return _url(value, what) if base.endswith("url") else []


def _url(value: str, what: str) -> list[str]:
    """A problem when `value` is not an http(s) URL with a host (the value is never shown)."""
    text = value.strip()
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018  (a bad port raises)
    except ValueError:
        return [f"{what}: not a well-formed URL (bad host or port)"]
    if parts.scheme not in ("http", "https"):
        return [f"{what}: not an http(s) URL (it must start with https:// or http://)"]
    if not parts.hostname:
        return [f"{what}: not a well-formed URL (no host)"]
    if any(c.isspace() for c in text):
        return [f"{what}: not a well-formed URL (it contains whitespace)"]
    return []
