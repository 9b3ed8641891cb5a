"""The jinja2 renderer: StrictUndefined, and no value reaches the script unquoted.

Every `{{ expression }}` must end in one of two filters, or the render fails:
- `q`: shell quoting (`shlex.quote`; a list gives space-separated quoted words). Used for
  everything in the shell part of the script.
- `sbatch`: a value on an `#SBATCH` line, in double quotes with `\\` and `"` escaped (how sbatch
  reads them); a newline or control character is refused, since it would end the comment line.
Integers and booleans may be printed bare (they are validated numbers); trusted shell code from
the config file is passed in as `ShellCode`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from rtool.core.safeio import trust_problem

PACKAGE_DIR = Path(__file__).resolve().parent
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class TemplateError(ValueError):
    """A template that cannot be found or rendered, or a value that cannot be written safely."""


class Quoted(str):
    """Text that went through a quoting filter (safe to print)."""


class ShellCode(str):
    """Shell code written by the config's author (e.g. `module load cuda`): printed as is."""


def shell_quote(value: Any) -> Quoted:
    """The quoting filter `q`: one shell word, or space-separated words for a list."""
    if value is None:
        raise TemplateError("a missing value (None) was passed to the q filter")
    if isinstance(value, (list, tuple)):
        return Quoted(" ".join(shlex.quote(str(v)) for v in value))
    return Quoted(shlex.quote(str(value)))


def sbatch_quote(value: Any) -> Quoted:
    """The `sbatch` filter: a value on an `#SBATCH` line."""
    text = str(value)
    if _CONTROL.search(text):
        raise TemplateError(f"value {text!r} on an #SBATCH line contains a newline or control char")
    if re.fullmatch(r"[A-Za-z0-9_.,:@%/+=\-\[\]]+", text):
        return Quoted(text)
    return Quoted('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')


def _finalize(value: Any) -> Any:
    if isinstance(value, (Quoted, ShellCode, bool, int)):
        return value
    raise TemplateError(
        f"value {value!r} reached the script without a quoting filter (use | q or | sbatch)"
    )


@lru_cache(maxsize=16)
def _environment(dirs: tuple[str, ...]) -> Any:
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    # Sandboxed: a template (user folders may be shared) cannot reach Python internals
    # (`''.__class__.__mro__`, `os.system`); unsafe attribute access raises SecurityError.
    env = SandboxedEnvironment(
        loader=jinja2.FileSystemLoader([*dirs, str(PACKAGE_DIR)]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_finalize,
    )
    env.filters["q"] = shell_quote
    env.filters["sbatch"] = sbatch_quote
    return env


def template_dirs(dirs: Iterable[str | Path | None]) -> tuple[str, ...]:
    """User template folders (searched before the shipped ones: same name overrides)."""
    return tuple(str(Path(d).expanduser().resolve()) for d in dirs if d)


def render(template_name: str, template_dirs: Sequence[str] = (), **values: Any) -> str:
    """Render a template by name (user folders first, then `rtool/slurm_templates/`)."""
    import jinja2
    from jinja2.sandbox import SecurityError

    env = _environment(tuple(template_dirs))
    try:
        _check_template_dirs(template_dirs)
        return str(env.get_template(template_name).render(**values))
    except SecurityError as exc:
        raise TemplateError(f"template {template_name}: unsafe operation refused ({exc})") from None
    except jinja2.TemplateNotFound as exc:
        where = ", ".join([*template_dirs, str(PACKAGE_DIR)])
        raise TemplateError(f"template {exc.name!r} not found in {where}") from None
    except jinja2.UndefinedError as exc:
        raise TemplateError(f"template {template_name}: {exc.message}") from None
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(
            f"template {exc.filename or template_name} line {exc.lineno}: {exc.message}"
        ) from None
    except UnicodeDecodeError as exc:  # a binary file given as --template: bad input
        raise TemplateError(
            f"template {template_name}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at"
            f" offset {exc.start})"
        ) from None


def _check_template_dirs(dirs: Sequence[str]) -> None:
    """Template folders must be the user's (or root's) and not writable by group or others."""
    for d in dirs:
        try:
            problem = trust_problem(d)
        except OSError:
            continue  # a missing folder holds no template
        if problem:
            raise TemplateError(f"refusing template folder {d}: {problem}")
