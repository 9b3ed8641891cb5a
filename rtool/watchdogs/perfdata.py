"""Nagios/Icinga performance data: `'label'=value[UOM];[warn];[crit];[min];[max]`.

The plugin guidelines (monitoring-plugins.org, "Performance data"): space separated pairs; the
label may hold any character but `=` and `'`, is quoted with `'` when it has spaces, and a
quote inside is written `''`; the value and thresholds are numbers without exponent, with a UOM
of s, us, ms, %, B, KB, MB, GB, TB or c; `U` is an undetermined value; trailing unfilled
semicolons may be dropped. rtool writes the label (with `=` replaced by `_` and line breaks and
`|` by spaces), always quoted, and bytes in B.

All the perfdata of a run goes after the first status line's `|` (Nagios reads one perfdata
part per plugin output; the other lines are long text), labels made unique.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from rtool.watchdogs.metrics import Measure

#: One performance data item, as the guidelines define it.
ITEM = re.compile(
    r"(?<![^ ])(?:'(?P<qlabel>(?:[^'=]|''){1,200})'|(?P<label>[^'= ]{1,200}))"
    r"=(?P<value>U|-?[0-9]{1,30}(?:\.[0-9]{1,30})?)(?P<uom>s|us|ms|%|B|KB|MB|GB|TB|c)?"
    r"(?:;(?P<warn>[^; ]{0,60})(?:;(?P<crit>[^; ]{0,60})"
    r"(?:;(?P<min>-?[0-9.]{0,40})(?:;(?P<max>-?[0-9.]{0,40}))?)?)?)?"
)


def number(value: float) -> str:
    """A number the way the guidelines want it: no exponent, no trailing zeros."""
    if value == int(value) and abs(value) < 1e18:
        return str(int(value))
    text = f"{value:.{3 if abs(value) >= 1 else 6}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def clean_label(label: str) -> str:
    """A label the format can carry: no `=`, no line break or `|`, not empty."""
    text = label.replace("=", "_").replace("|", " ").replace("\r", " ").replace("\n", " ")
    return text.strip() or "_"


def quote(label: str) -> str:
    return "'" + clean_label(label).replace("'", "''") + "'"


def item(label: str, m: Measure) -> str:
    """One item, e.g. `'/scratch'=91%;80;90;0;100`."""
    unit = m.metric.info.unit.value
    value = "U" if not math.isfinite(m.value) else number(m.value) + unit
    tail = ";".join(_opt(x) for x in (m.warn, m.crit, m.min, m.max)).rstrip(";")
    return f"{quote(label)}={value}" + (f";{tail}" if tail else "")


def _opt(value: float | None) -> str:
    return "" if value is None or not math.isfinite(value) else number(value)


def render(pairs: Iterable[tuple[str, Measure]]) -> str:
    """The perfdata part for (thing, measure) pairs; a label seen before gets ` #2`, ` #3`."""
    seen: dict[str, int] = {}
    out = []
    for what, m in pairs:
        label = clean_label(m.label(what))
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label = f"{label} #{seen[label]}"
        out.append(item(label, m))
    return " ".join(out)


def plugin_text(text: str) -> str:
    """Status text without `|` (it would start the perfdata part)."""
    return text.replace("|", "/")


def parse(perf: str) -> list[dict[str, str | None]]:
    """The items of a perfdata part (labels unquoted); ValueError when it does not follow the
    format. Used by the tests and by anyone who wants to read rtool's lines back."""
    items, pos = [], 0
    while True:  # items separated by single spaces, nothing else
        m = ITEM.match(perf, pos)
        if m is None or (m.end() < len(perf) and perf[m.end()] != " "):
            raise ValueError(f"not performance data: {perf[:200]!r}")
        pos = m.end() + 1
        d = m.groupdict()
        label = d.pop("qlabel")
        d["label"] = label.replace("''", "'") if label is not None else d["label"]
        items.append(d)
        if pos > len(perf):
            return items
