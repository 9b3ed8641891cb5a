"""Help pages as a newcomer reads them: typer's type labels and markup quirks tidied.

typer labels every option with its Python type (`--json <bool>`, `--verbose <int>`,
`--tee <path>`), writes arguments as `{paths}...` in the usage line, and reads `[submit]` in
a help text as a rich markup tag (so "default: [submit] max_requeues" came out as "default:
 max_requeues"). `tidy(command)` fixes the click command tree typer built, once, before it is
used: flags show no value, an option's value is named like click does (TEXT, INTEGER, PATH),
arguments read `PATHS...`, square brackets in help texts are shown as written, and a
docstring's paragraphs are not broken where the source lines were.
"""

from __future__ import annotations

from typing import Any

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
    if getattr(getattr(param, "type_descriptor", None), "is_path", False):
        bare = "path"
    if bare.startswith("list["):
        return _VALUE_NAMES.get(bare[5:-1], "TEXT")
    return _VALUE_NAMES.get(bare, "TEXT")


def _tidy_param(param: Any) -> None:
    param.help = _escape(getattr(param, "help", None))
    if param.param_type_name == "argument":
        name = (param.metavar or param.name or "ARG").upper()
        dots = "..." if param.nargs != 1 else ""
        usage = name + dots if param.required else f"[{name}]{dots}"
        param.metavar = name
        param._usage_display_name = lambda: usage
        param.display_type_rich = lambda ctx: ""
        return
    if param.is_flag or param.count:
        param.metavar = ""
        if param.secondary_opts:  # `[default: --preflight]`, not `preflight`; none if unset
            chosen = {True: param.opts[0], False: param.secondary_opts[0]}.get(param.default)
            if chosen and param.show_default:
                param.help = f"{param.help or ''} \\[default: {chosen}]".strip()
            param.show_default = False
    elif param.metavar is None:
        param.metavar = _value_name(param)


def tidy(command: Any) -> Any:
    """Tidy `command` and, for a group, every command below it (idempotent)."""
    if getattr(command, "_rtool_tidy", False):
        return command
    command._rtool_tidy = True
    command.help = _escape(_paragraphs(command.help))
    # a sub-app built on its own gets typer's shell-completion options: they belong to none
    command.params = [p for p in command.params if p.name not in _COMPLETION]
    command.short_help = _escape(command.short_help)
    for param in command.params:
        _tidy_param(param)
    show_help = command.get_help_option

    def help_option(ctx: Any) -> Any:  # click makes `-h/--help` on demand: no `<bool>` either
        option = show_help(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = help_option
    for sub in getattr(command, "commands", {}).values():
        tidy(sub)
    return command
