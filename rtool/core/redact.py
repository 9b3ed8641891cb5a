"""The one redaction function: secrets never reach a log line, an error, `config show`, status or
an alert (stdlib only).

`redact(text)` masks URL user-info, query values, webhook and ping paths and long token-like
path segments, Slack tokens, `Authorization`/`Bearer` values, `password=`-style pairs, and the
values registered as secrets (`register_secret`: read from env or a 0600 file). The CLI installs
`RedactFilter` on the root handlers, so every log record is redacted too.
"""

from __future__ import annotations

import logging
import re
import string
import threading
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from rtool.core.alert import Alert

MASK = "***"
_A = re.ASCII | re.IGNORECASE
#: Every pattern is linear-time (rtool/core/linear.py): the parts that may repeat are bounded or
#: end the pattern, so a 1 MB line of any shape is scanned in milliseconds.
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # Slack tokens: xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxe-, xapp-
    (re.compile(r"\bx(?:ox[abeoprs]|app)-[A-Za-z0-9\-]{4,}", _A), "xox*-" + MASK),
    # Slack incoming webhooks: keep the host, drop the path
    (re.compile(r"(hooks\.slack(?:-gov)?\.com/)[^\s\"'<>]+", _A), r"\1" + MASK),
    # Discord-style /api/webhooks/ID/TOKEN
    (re.compile(r"(/api/webhooks/)[^\s\"'<>]+", _A), r"\1" + MASK),
    # healthchecks.io and friends: /ping/<uuid-or-key>, hc-ping.com/<uuid>
    (re.compile(r"(hc-ping\.com/|/ping/)[^\s\"'<>]+", _A), r"\1" + MASK),
    # user-info in any URL
    (
        re.compile(r"(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]{0,30}://)[^/\s@\"'<>]{1,512}@", _A),
        r"\1" + MASK + "@",
    ),
    # query strings: every value
    (re.compile(r"([?&][^=&#?\s\"'<>]{1,128}=)[^&#\s\"'<>]+", _A), r"\1" + MASK),
    # Authorization / Proxy-Authorization headers and bare bearer tokens
    (re.compile(r"((?:proxy-)?authorization\s{0,8}[:=]\s{0,8})[^\r\n,;]+", _A), r"\1" + MASK),
    (re.compile(r"\b(bearer|basic|token)\s{1,8}[A-Za-z0-9._~+/=\-]{8,}", _A), r"\1 " + MASK),
]
#: A URL (scheme, then up to a space or quote), and a long opaque segment of its path (webhook
#: ids and tokens of other services): masked by `_long_segments`.
_URL = re.compile(r"(?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]{0,30}://[^\s\"'<>]+", _A)
_SEGMENT = re.compile(r"(?<=/)[A-Za-z0-9_\-]{24,}(?=[/?#]|$)", _A)
#: `password=...` pairs: a key holding one of these words, a `:` or `=`, a value. The key's other
#: characters (letters, `_`, `-`, at most `_KEY_MORE` on each side) are walked in `_pairs`.
_KEYWORD = re.compile(r"password|passwd|secret|token|api[_\-]?key", _A)
_ASSIGN = re.compile(r"[\"']?\s{0,8}[:=]\s{0,8}[\"']?", _A)
_VALUE = re.compile(r"[^\s\"',;&]+", _A)
_KEY_CHARS = frozenset(string.ascii_letters + "_-")
_KEY_MORE = 40
#: Keys that name where a secret is (an env var, a file), not the secret itself.
_NAMING = ("_env", "_file", "_path", "_cmd", "_name")
_known: set[str] = set()
_lock = threading.Lock()
#: Results of `redact` by input text (alerts repeat every poll: each text is scanned once).
#: Cleared whenever a secret is registered; bounded in entries and in the length of a text.
_cache: dict[str, str] = {}
_CACHE_ENTRIES = 2048
_CACHE_TEXT = 1024  # at most ~4 MB held (input and output)


def register_secret(value: str | None) -> None:
    """Mask this exact value wherever it appears from now on (values of 4+ characters)."""
    if not value or len(value) < 4:
        return
    parts = {value}
    if "://" in value:  # a URL secret: error texts often quote only its path or query
        url = urlsplit(value)
        parts |= {p for p in (url.path, url.query, url.password or "") if len(p) >= 8}
    with _lock:
        _known.update(parts)
        _cache.clear()


def redact(text: object) -> str:
    """`text` with every secret-looking part replaced by `***`."""
    original = str(text)
    hit = _cache.get(original)
    if hit is not None:
        return hit
    with _lock:
        known = sorted(_known, key=len, reverse=True)
        generation = len(known)  # _known only grows: a secret registered meanwhile changes it
    out = original
    for value in known:
        out = out.replace(value, MASK)
    for pattern, repl in _PATTERNS:
        out = pattern.sub(repl, out)
    out = _URL.sub(_long_segments, out)
    out = _pairs(out)
    if len(original) <= _CACHE_TEXT:
        with _lock:
            if len(_known) == generation:
                if len(_cache) >= _CACHE_ENTRIES:
                    _cache.clear()
                _cache[original] = out
    return out


def _long_segments(m: re.Match[str]) -> str:
    url = m.group(0)
    head, _, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    if not slash:
        return url
    return f"{head}://{host}/" + _SEGMENT.sub(MASK, "/" + path)[1:]


def _pairs(text: str) -> str:
    """`text` with the value of every `...password...=value` pair masked (linear: each keyword
    is looked at once, and the key around it is walked at most `_KEY_MORE` characters)."""
    out, done = [], 0
    for m in _KEYWORD.finditer(text):
        if m.start() < done:
            continue
        end = m.end()
        while end < len(text) and end - m.end() < _KEY_MORE and text[end] in _KEY_CHARS:
            end += 1
        assign = _ASSIGN.match(text, end)
        value = _VALUE.match(text, assign.end()) if assign else None
        if assign is None or value is None or value.group(0) == MASK:
            continue
        start = m.start()
        while start > done and m.start() - start < _KEY_MORE and text[start - 1] in _KEY_CHARS:
            start -= 1
        walked_all = m.start() - start == _KEY_MORE
        if not walked_all and start > 0 and text[start - 1].isalnum():  # the key starts a word
            continue
        if text[start:end].lower().endswith(_NAMING):
            continue
        out += [text[done : value.start()], MASK]
        done = value.end()
    return "".join(out) + text[done:]


def redact_alert(alert: Alert) -> Alert:
    """The alert with its summary and field values redacted (its key, the identity, is kept)."""
    fields = {k: redact(v) for k, v in alert.fields.items()}
    return replace(alert, summary=redact(alert.summary), fields=fields)


def redact_data(obj: Any) -> Any:
    """Every string inside nested dicts and lists redacted (for JSON output)."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {k: redact_data(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_data(v) for v in obj]
    return obj


class RedactFilter(logging.Filter):
    """Redacts each record's formatted message (and the traceback text of `exc_info`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave it to logging's own error report
            return True
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def install(logger: logging.Logger | None = None) -> None:
    """Put a `RedactFilter` on every handler of `logger` (default: the root logger)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactFilter) for f in handler.filters):
            handler.addFilter(RedactFilter())
