"""Help pages as a newcomer reads them: typer's type labels and markup quirks tidied.

typer labels every option with its Python type (`--json <bool>`), writes arguments as
`{paths}...` in the usage line, and reads `[submit]` in a help text as a rich markup tag.
`tidy(command)` fixes the click command tree typer built, once, before it is used: flags show
no value, an option's value is named like click does (TEXT, INTEGER, PATH), arguments read
`PATHS...`, square brackets are shown as written, and a docstring's paragraphs are not broken
where the source lines were. Nothing is patched on typer's objects: an argument is remade as
`Argument` (public methods overridden), options get a `metavar`.
"""

from __future__ import annotations

from typing import Any

import typer

#: The help option's names (the root's context_settings; a command made on its own gets them too).
HELP_NAMES = ["-h", "--help"]
#: typer's type label -> the value name shown in help (click's names).
_VALUE_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH", "bool": ""}


_COMPLETION = ("install_completion", "show_completion")


def _escape(text: str | None) -> str | None:
    """Square brackets shown as written (rich would take `[submit]` for a style tag)."""
    return text.replace("[", "\\[") if text and "[" in text else text


def _paragraphs(text: str | None) -> str | None:
    """A docstring's paragraphs, each on one line (rich would keep the source's line breaks,
    mid-sentence); indented paragraphs (examples, lists) are kept as written."""
    if not text:
        return text
    out = []
    for para in text.strip().split("\n\n"):
        lines = para.split("\n")
        indented = any(ln.startswith((" ", "\t")) for ln in lines[1:]) or para.startswith(" ")
        out.append(para if indented else " ".join(ln.strip() for ln in lines))
    return "\n\n".join(out)


def _value_name(param: Any) -> str:
    label = getattr(param, "type_descriptor", None)
    bare = param.bare_type() if label is not None and hasattr(param, "bare_type") else "str"
    if getattr(label, "is_path", False):
        bare = "path"
    if bare.startswith("list["):
        return _VALUE_NAMES.get(bare[5:-1], "TEXT")
    return _VALUE_NAMES.get(bare, "TEXT")


class Argument(typer.core.TyperArgument):
    """typer's argument shown like click's: `PATHS...` in the usage line, no `<path>` label."""

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        name = self.metavar or ""
        dots = "..." if self.nargs != 1 else ""
        return [name + dots if self.required else f"[{name}]{dots}"]

    def display_type_rich(self, ctx: Any) -> str | None:
        return ""


def _argument(param: Any) -> Argument:
    """`param` (a typer argument) remade as `Argument`, named in capitals (no completion:
    rtool's commands offer none)."""
    return Argument(
        param_decls=[param.name],
        type_descriptor=param.type_descriptor,
        required=param.required,
        default=param.default,
        callback=param.callback,
        nargs=param.nargs,
        metavar=(param.metavar or param.name or "ARG").upper(),
        expose_value=param.expose_value,
        is_eager=param.is_eager,
        envvar=param.envvar,
        show_default=param.show_default,
        show_choices=param.show_choices,
        show_envvar=param.show_envvar,
        help=param.help,
        hidden=param.hidden,
        min=param.min,
        max=param.max,
        rich_help_panel=param.rich_help_panel,
    )


def _tidy_param(param: Any) -> Any:
    param.help = _escape(getattr(param, "help", None))
    if param.param_type_name == "argument":
        return param if isinstance(param, Argument) else _argument(param)
    if param.is_flag or param.count:
        param.metavar = ""
        if param.secondary_opts:  # `[default: --preflight]`, not `preflight`; none if unset
            chosen = {True: param.opts[0], False: param.secondary_opts[0]}.get(param.default)
            if chosen and param.show_default:
                param.help = f"{param.help or ''} \\[default: {chosen}]".strip()
            param.show_default = False
    elif param.metavar is None:
        param.metavar = _value_name(param)
    return param


def tidy(command: Any) -> Any:
    """Tidy `command` and, for a group, every command below it (idempotent)."""
    if getattr(command, "_rtool_tidy", False):
        return command
    command._rtool_tidy = True
    command.help = _escape(_paragraphs(command.help))
    # a sub-app built on its own gets typer's shell-completion options: they belong to none
    command.params = [p for p in command.params if p.name not in _COMPLETION]
    command.short_help = _escape(command.short_help)
    command.params = [_tidy_param(param) for param in command.params]
    # click makes `-h/--help` on first use and keeps it: made here, it shows no `<bool>` either
    option = command.get_help_option(typer.Context(command, help_option_names=HELP_NAMES))
    if option is not None:
        option.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        tidy(sub)
    return command
