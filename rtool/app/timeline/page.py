"""One self-contained HTML page: inline CSS, inline SVG, a few lines of inline script, and a
Content-Security-Policy that allows nothing from outside (no network, no fonts, no images).

Every text that comes from a run, a log or a config is escaped with `esc` before it reaches the
page; nothing is put into the script.
"""

from __future__ import annotations

import html
import re
import time
from pathlib import Path

from rtool import __version__
from rtool.core.errors import UsageError
from rtool.core.redact import redact
from rtool.core.state import atomic_write
from rtool.runs.endings import Cause

#: What the page may load: nothing but its own inline style and script.
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

#: The colour of each way an attempt ends (colour-blind safe: Okabe-Ito, plus greys).
COLOURS = {
    Cause.FINISHED: "#009E73",
    Cause.RUNNING: "#0072B2",
    Cause.PENDING: "#999999",
    Cause.TIME_LIMIT: "#56B4E9",
    Cause.PREEMPTED: "#CC79A7",
    Cause.NODE_FAILURE: "#E69F00",
    Cause.HANG: "#8B5A2B",
    Cause.CRASH: "#D55E00",
    Cause.CANCELLED: "#666666",
    Cause.ENDED: "#444444",
}

STYLE = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;
background:#fff;max-width:1200px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:16px 0 6px}.muted{color:#666}.small{font-size:12px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f6f6f6;font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.hl td{background:#fff3c4}.st{font-weight:600}table.attempts td{white-space:nowrap}
table.attempts td:last-child{white-space:normal;min-width:180px}
.OK{color:#007a55}.WARNING{color:#a06000}.CRITICAL{color:#c00}.UNKNOWN{color:#8a2be2}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:6px 12px;min-width:110px}
.card b{display:block;font-size:18px}.scroll{max-height:480px;overflow:auto;border:1px solid #eee}
svg{display:block;max-width:100%;height:auto}svg text{font:11px system-ui,sans-serif;fill:#333}
svg .att:hover,svg .att.hl{stroke-width:5}svg .axis{stroke:#888}svg .grid{stroke:#eee}
.legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:10px;
height:10px;margin-right:4px;vertical-align:middle}pre{white-space:pre-wrap;margin:0}
"""

#: Hovering a mark or a table row highlights both (data-attempt ties them); nothing else.
SCRIPT = """
(function(){
  function mark(n, on){
    document.querySelectorAll('[data-attempt="'+n+'"]').forEach(function(el){
      el.classList.toggle('hl', on);
    });
  }
  document.querySelectorAll('[data-attempt]').forEach(function(el){
    var n = el.getAttribute('data-attempt');
    el.addEventListener('mouseenter', function(){ mark(n, true); });
    el.addEventListener('mouseleave', function(){ mark(n, false); });
  });
})();
"""


def esc(value: object) -> str:
    """Text for the page, redacted as alerts are (a token the training printed in its log tail
    never reaches the file), then escaped (quotes too: safe in an attribute)."""
    return html.escape(redact(str(value)), quote=True)


#: A page shows log tails and errors: only you may read it unless `--mode` says otherwise.
PAGE_MODE = 0o600


def parse_mode(text: str | None) -> int:
    """`--mode 0644` (octal, at most 0777; no setuid, setgid or sticky bits) -> 0o644."""
    if text is None:
        return PAGE_MODE
    if not re.fullmatch(r"0?[0-7]{3}", text.strip()):
        raise UsageError(f"--mode {text!r}: give an octal file mode such as 0600 or 0644")
    return int(text.strip(), 8)


def stamp(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def legend(causes: list[Cause]) -> str:
    items = "".join(
        f'<span><i class="sw" style="background:{COLOURS[c]}"></i>{esc(c.value)}</span>'
        for c in causes
    )
    return f'<p class="legend small">{items}</p>'


def document(title: str, body: str, now: float) -> str:
    """The whole page around `body` (already HTML)."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{STYLE}</style></head>\n<body>\n"
        f"{body}\n"
        f'<p class="muted small">Made by rtool {esc(__version__)} at {esc(stamp(now))}; '
        "this page loads nothing from the network.</p>\n"
        f"<script>{SCRIPT}</script>\n</body></html>\n"
    )


def write(path: Path, text: str, mode: int = PAGE_MODE) -> None:
    """Write the page to `path` atomically (a temp file beside it, then rename: a symlink at
    `path` is replaced, never followed); a missing folder or a folder at `path` is a usage
    error (one line)."""
    target = path.expanduser()
    if not target.parent.is_dir():
        raise UsageError(f"--html {path}: no such folder {target.parent}")
    if target.is_dir() and not target.is_symlink():
        raise UsageError(f"--html {path}: is a folder, give a file name")
    try:
        atomic_write(target, text, mode)
    except OSError as exc:
        raise UsageError(f"--html {path}: {exc.strerror or exc}") from None
