"""command: your own check (`bash -c COMMAND`, bounded by the timeout) exits 0."""

from __future__ import annotations

from rtool.core.config.fields import setting
from rtool.core.config.types import Section
from rtool.core.proc import ProcError, ProcTimeout
from rtool.core.proc import run as run_proc
from rtool.nodes.preflight.base import NodeBase, Outcome

NAME = "command"
#: The last bytes of the command's stdout and of its stderr kept (it may print gigabytes).
OUTPUT_KEPT = 64 * 1024


class Settings(Section):
    command: str | None = setting(
        None, "Your own check (bash -c), exit 0 = healthy: 'ibstat | grep -q Active'."
    )


def applies(ctx: NodeBase) -> bool:
    return bool(ctx.command)


def run(ctx: NodeBase) -> Outcome:
    assert ctx.command
    try:
        res = run_proc(
            ["bash", "-c", ctx.command], timeout=ctx.timeout, check=False, max_output=OUTPUT_KEPT
        )
    except ProcTimeout:
        return Outcome(NAME, False, f"{ctx.command!r} did not finish within {ctx.timeout:g}s")
    except ProcError as exc:
        return Outcome(NAME, False, f"{ctx.command!r} could not run: {exc}")
    output = (res.stdout + res.stderr).strip()
    if res.returncode != 0:
        last = output[-1000:].splitlines()[-1] if output else "no output"
        return Outcome(NAME, False, f"{ctx.command!r} exit code {res.returncode}: {last}", output)
    return Outcome(NAME, True, f"{ctx.command!r} exit code 0")
