"""The linear-time rule for regular expressions run on outside text (stdlib only).

Python's `re` backtracks: a quantifier nested inside another over the same characters
(`(a+)+`, `(\\w+\\s?)*`, `(.*,)*`) can take exponential time on a line that almost matches, and a
backreference is never linear. `problem(pattern)` names such a construct, or returns None:

- a repeat that can iterate more than once whose body holds another repeat, unless each
  iteration is pinned by a required first or last element that none of the inner repeats can
  consume (`(?:,[a-z]{1,20}){0,30}`, `(?:\\d{1,3}\\.){3}` and `(?:/[^/]*)*` are fine);
- a backreference (`(a)\\1`) or a conditional group.

Every pattern rtool runs on outside text follows the rule (a test enumerates them and times
each on 1 MB of adversarial input); user patterns (`[[runs.signature]]`) are refused with this
message. Gaps between two parts of a line are written bounded (`.{0,200}`), never `.*`, so a
search stays linear however many times the first part occurs.
"""

from __future__ import annotations

import re
import sys
from typing import Any

if sys.version_info >= (3, 11):
    from re import _constants as C
    from re import _parser as P
else:  # pragma: no cover - Python 3.10
    import sre_constants as C
    import sre_parse as P

_REPEATS = {C.MAX_REPEAT, C.MIN_REPEAT} | (
    {C.POSSESSIVE_REPEAT} if hasattr(C, "POSSESSIVE_REPEAT") else set()
)
#: Characters tried when telling whether two character sets overlap.
_UNIVERSE = [chr(i) for i in range(256)] + ["\u2028", "\uff11", "\u0661", "é", "ß", "€"]
_CATEGORIES = {
    C.CATEGORY_DIGIT: str.isdigit,
    C.CATEGORY_NOT_DIGIT: lambda c: not c.isdigit(),
    C.CATEGORY_SPACE: str.isspace,
    C.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
    C.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
    C.CATEGORY_NOT_WORD: lambda c: not (c.isalnum() or c == "_"),
}


def _in_set(items: list[tuple[Any, Any]], ch: str) -> bool:
    negate, hit = False, False
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            hit = hit or ord(ch) == av
        elif op is C.RANGE:
            hit = hit or av[0] <= ord(ch) <= av[1]
        elif op is C.CATEGORY:
            hit = hit or _CATEGORIES.get(av, lambda c: True)(ch)
        else:  # a set we cannot read: assume it matches (strict)
            hit = True
    return hit != negate


def _chars(op: Any, av: Any, ignore_case: bool) -> set[str] | None:
    """The characters one element can consume, or None when it is not a single character."""
    if op is C.LITERAL:
        test = lambda c: ord(c) == av  # noqa: E731
    elif op is C.NOT_LITERAL:
        test = lambda c: ord(c) != av  # noqa: E731
    elif op is C.ANY:
        test = lambda c: True  # noqa: E731
    elif op is C.IN:
        test = lambda c: _in_set(av, c)  # noqa: E731
    else:
        return None
    if ignore_case:
        return {
            c for c in _UNIVERSE if any(len(v) == 1 and test(v) for v in (c, c.lower(), c.upper()))
        }
    return {c for c in _UNIVERSE if test(c)}


def _items(sub: Any) -> list[tuple[Any, Any]]:
    return list(sub.data if hasattr(sub, "data") else sub)


def _children(op: Any, av: Any) -> list[Any]:
    if op in _REPEATS:
        return [av[2]]
    if op is C.SUBPATTERN:
        return [av[-1]]
    if op is C.BRANCH:
        return list(av[1])
    if op in (C.ASSERT, C.ASSERT_NOT):
        return [av[1]]
    if hasattr(C, "ATOMIC_GROUP") and op is C.ATOMIC_GROUP:
        return [av]
    return []


def _consumable(sub: Any, ignore_case: bool, inner: bool = False) -> set[str]:
    """Characters `sub` can consume (`inner`: those of the repeats inside it that can iterate)."""
    out: set[str] = set()
    for op, av in _items(sub):
        if not inner:
            out |= _chars(op, av, ignore_case) or set()
        elif op in _REPEATS and av[1] > 1:
            out |= _consumable(av[2], ignore_case)
        for child in _children(op, av):
            out |= _consumable(child, ignore_case, inner)
    return out


def _first(sub: Any, ignore_case: bool) -> set[str]:
    """The characters a match of `sub` can start with (all of them when unsure)."""
    out: set[str] = set()
    for op, av in _items(sub):
        chars = _chars(op, av, ignore_case)
        if chars is not None:
            return out | chars
        if op in (C.ASSERT, C.ASSERT_NOT, C.AT):
            continue
        if op is C.SUBPATTERN:
            return out | _first(av[-1], ignore_case)
        if op is C.BRANCH:
            return out | set().union(*(_first(b, ignore_case) for b in av[1]))
        if op in _REPEATS:
            out |= _first(av[2], ignore_case)
            if av[0] == 0:
                continue
            return out
        return set(_UNIVERSE)
    return out | {EMPTY}


#: In a set of first characters: the part can match the empty string.
EMPTY = ""


def _ambiguous_branch(sub: Any, start: set[str], ignore_case: bool) -> bool:
    """Whether a choice inside a repeated `sub` (whose matches start with `start`) has two
    alternatives that can start alike (`a|a`), or an empty one beside one that starts like the
    next iteration (`a(?:|a)`, from `a|aa`)."""
    for op, av in _items(sub):
        if op is C.BRANCH:
            firsts = [_first(b, ignore_case) for b in av[1]]
            for i, a in enumerate(firsts):
                if any(a & b for b in firsts[i + 1 :]):
                    return True
            if any(EMPTY in f for f in firsts) and any((f - {EMPTY}) & start for f in firsts):
                return True
        if any(_ambiguous_branch(c, start, ignore_case) for c in _children(op, av)):
            return True
    return False


def _pinned(body: list[tuple[Any, Any]], inner: set[str], ignore_case: bool) -> bool:
    """Whether the body's first or last element is one required character outside `inner`."""
    for op, av in (body[:1] + body[-1:]) if body else []:
        chars = _chars(op, av, ignore_case)
        if chars is not None and not chars & inner:
            return True
    return False


def _walk(sub: Any, ignore_case: bool) -> str | None:
    for op, av in _items(sub):
        if op in (C.GROUPREF, C.GROUPREF_EXISTS) or (
            hasattr(C, "GROUPREF_IGNORE") and op is C.GROUPREF_IGNORE
        ):
            return "a backreference or conditional group (not linear-time)"
        if op in _REPEATS and av[1] > 1:
            body = _items(av[2])
            inner = _consumable(av[2], ignore_case, inner=True)
            start = _first(av[2], ignore_case) - {EMPTY}
            if _ambiguous_branch(av[2], start, ignore_case):
                inner |= start
            if inner and not _pinned(body, inner, ignore_case):
                return (
                    "a quantifier or choice nested inside a repeat over the same characters "
                    "(exponential time on a line that almost matches)"
                )
        for child in _children(op, av):
            found = _walk(child, ignore_case)
            if found:
                return found
    return None


def problem(pattern: str | re.Pattern[str], flags: int = 0) -> str | None:
    """Why `pattern` is not linear-time (one line), or None when it follows the rule."""
    text = pattern if isinstance(pattern, str) else pattern.pattern
    if isinstance(pattern, re.Pattern):
        flags = pattern.flags
    try:
        tree: Any = P.parse(text, flags)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"not a valid regex: {exc}"
    ignore_case = bool((flags | tree.state.flags) & re.IGNORECASE)
    try:
        return _walk(tree, ignore_case)
    except RecursionError:
        return "nested too deeply to be checked"
