"""`rtool status --html FILE`: everything rtool watches on one page. Each section of `rtool
status` (jobs, cron, alerts, disks, memory, switches, outbox, nodes) with its status and the
screen's own lines, then the timeline of every run whose ledger is stored: the runs named by
`[[watch.run]]` and `[[watch.job]]` entries first, then the others, newest first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rtool.app.status import render as text
from rtool.app.timeline.page import document, esc, stamp
from rtool.app.timeline.run import run_section
from rtool.core.redact import redact
from rtool.runs import store

if TYPE_CHECKING:
    from rtool.app.plumbing.appconfig import Config
    from rtool.core.state import StateDir
    from rtool.runs.model import Ledger

#: At most this many run timelines on the page.
MAX_RUNS = 20
_STATUSES = ("OK", "WARNING", "CRITICAL", "UNKNOWN")


def _section(title: str, lines: list[str]) -> str:
    """A section from the screen's lines: the status word of its head line, then the lines."""
    if not lines:
        return ""
    words = lines[0].split()
    status = words[1] if len(words) > 1 and words[1] in _STATUSES else "-"
    body = esc(redact("\n".join(lines)))
    return (
        f'<section class="part" data-part="{esc(title.lower())}">'
        f'<h3>{esc(title)} <span class="st {esc(status)}">{esc(status)}</span></h3>'
        f"<pre>{body}</pre></section>"
    )


def watched_runs(cfg: Config, state: StateDir) -> list[Ledger]:
    """The stored ledgers: runs of the config's entries first, then the rest, newest first."""
    named = [r.name for r in cfg.watch.run] + [j.run or j.name for j in cfg.watch.job]
    names = list(dict.fromkeys(n for n in named if n))
    folder = state.path / "runs"
    stored: list[tuple[float, str]] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        data = state.read_json(f"runs/{path.name}", {})
        if isinstance(data.get("run"), str):
            updated = data.get("updated")
            stored.append((updated if isinstance(updated, (int, float)) else 0.0, data["run"]))
    names += [n for _, n in sorted(stored, reverse=True) if n not in names]
    out = []
    for name in names:
        try:
            led = store.load(state, name)
        except Exception:  # a newer ledger format: shown by `rtool history`, skipped here
            continue
        if led is not None and led.attempts:
            out.append(led)
        if len(out) >= MAX_RUNS:
            break
    return out


def status_page(data: dict[str, Any], runs: list[Ledger]) -> str:
    """The page of `rtool status`'s data (`rtool.app.status.view.gather`) and the runs."""
    now = float(data["time"])
    overall = str(data["status"])
    head = (
        f'<h1>rtool status <span class="st {esc(overall)}">{esc(overall)}</span></h1>'
        f'<p class="muted">{esc(data["user"])}@{esc(data["host"])}, {esc(stamp(now))}; '
        f"state dir {esc(data['state_dir'])}</p>"
    )
    parts = "".join(_section(part.__name__.title(), part(data, now)) for part in text.PARTS)
    if runs:
        timelines = "".join(run_section(led, now, level=2) for led in runs)
    else:
        timelines = '<p class="muted">No run ledger stored yet (rtool watch run NAME).</p>'
    body = head + "<h2>What rtool watches</h2>" + parts + "<h2>Runs</h2>" + timelines
    return document(f"rtool status: {overall}", body, now)
