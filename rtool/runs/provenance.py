"""What changed between attempts (pure): the script's git revision and dirty state, the
versions of the packages the training imported, the files on its command line. The shim
records them (rtool.shim.provenance) in the heartbeat; the ledger keeps them per attempt;
`rtool history` and the timeline show what changed (docs/guide/provenance.md)."""

from __future__ import annotations

from collections.abc import Sequence

from rtool.runs.model import Attempt

#: At most this many package changes are named; the rest are counted.
MAX_NAMED = 6


def _packages(text: str | None) -> dict[str, str]:
    pairs = (item.partition("==") for item in (text or "").split())
    return {name: version for name, _, version in pairs if name and version}


def _inputs(text: str | None) -> dict[str, str]:
    pairs = (item.rpartition(" ") for item in (text or "").split("; "))
    return {name: digest for name, _, digest in pairs if name and digest}


def _code(before: str | None, after: str | None) -> list[str]:
    if not before or not after or before == after:
        return []
    (rev0, _, state0), (rev1, _, state1) = before.partition(" "), after.partition(" ")
    out = [f"code {rev0} -> {rev1}"] if rev0 != rev1 else []
    if "dirty" in state1 and (rev0 != rev1 or "dirty" not in state0):
        out.append("checkout dirty")
    elif "dirty" in state0 and "clean" in state1 and rev0 == rev1:
        out.append("checkout clean again")
    return out


def _package_changes(before: str | None, after: str | None) -> list[str]:
    if not before or not after:
        return []
    old, new = _packages(before), _packages(after)
    out = [
        f"{n} {old[n]} -> {new[n]}" if n in old and n in new else f"{n} {new[n]} new"
        for n in sorted(new)
        if old.get(n) != new[n]
    ]
    out += [f"{n} gone" for n in sorted(set(old) - set(new))]
    if len(out) > MAX_NAMED:
        out = [*out[:MAX_NAMED], f"{len(out) - MAX_NAMED} more packages changed"]
    return out


def _input_changes(before: str | None, after: str | None) -> list[str]:
    old, new = _inputs(before), _inputs(after)
    return [f"{n} edited" for n in sorted(new) if n in old and old[n] != new[n]]


def changes(before: Attempt, after: Attempt) -> list[str]:
    """What differs between two attempts' provenance (only what both recorded)."""
    return (
        _code(before.code_version, after.code_version)
        + _package_changes(before.packages, after.packages)
        + _input_changes(before.inputs, after.inputs)
    )


def changed(attempts: Sequence[Attempt]) -> dict[int, tuple[int, list[str]]]:
    """{attempt number: (the earlier attempt compared with, what changed)} for each attempt
    whose provenance differs from the last earlier one that recorded any."""
    out: dict[int, tuple[int, list[str]]] = {}
    last: Attempt | None = None
    for a in attempts:
        if not (a.code_version or a.packages or a.inputs):
            continue
        if last is not None:
            diff = changes(last, a)
            if diff:
                out[a.number] = (last.number, diff)
        last = a
    return out


def line(since: int, diff: list[str]) -> str:
    return f"     ↳ changed since attempt {since}: {'; '.join(diff)}"
