"""The one small interface every channel implements, and its errors."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

from rtool.core.config.fields import setting
from rtool.core.config.types import PositiveDuration, Section, resolve_secret
from rtool.core.errors import SecretError
from rtool.core.redact import redact
from rtool.notify.channels.notification import Notification

StatusName = Literal["OK", "WARNING", "CRITICAL", "UNKNOWN"]
BAD: list[StatusName] = ["WARNING", "CRITICAL", "UNKNOWN"]
ALL: list[StatusName] = ["OK", *BAD]


class DeliveryError(Exception):
    """The server did not accept a notification.

    permanent:   retrying will not help (SMTP 5xx, Slack invalid_auth, HTTP 404): the
                 notification goes to the fallback channel and is reported once.
    retry_after: the server asked to wait this long (HTTP 429 Retry-After).
    The message never contains a secret.
    """

    def __init__(self, reason: str, *, permanent: bool, retry_after: float | None = None):
        reason = redact(reason)  # a requests error may quote the webhook URL
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent
        self.retry_after = retry_after

    @property
    def kind(self) -> str:
        return "permanent" if self.permanent else "temporary"


@dataclass
class Receipt:
    """What the server said when it accepted a notification."""

    ref: str | None = None  # a reference later messages can thread under (Slack ts)
    detail: str = ""


@dataclass
class Envelope:
    """A notification as handed to a channel: the notification plus delivery context."""

    notification: Notification
    note: str | None = None  # e.g. "slack refused it permanently: invalid_auth"
    thread: str | None = None  # the channel's reference of the incident's first message


class ChannelSection(Section):
    statuses: list[StatusName] = setting(
        default_factory=lambda: list(BAD),
        help="Which statuses this channel receives (alerts, changes, repeats).",
    )
    resolved: bool = setting(
        True, "Send the resolved notice here when an alert this channel received is over."
    )
    timeout: PositiveDuration = setting(10.0, "Timeout of every network call of this channel.")


class Channel(Protocol):
    """A channel: one module with the class (its `name`, written once, is the `[notify.NAME]`
    section and the channel's name everywhere) and its config section, plus one line in
    `rtool.notify.channels.LINES`. A class may set `unconfigured` to a section it works with when
    the config has none (the log channel)."""

    name: ClassVar[str]
    config: ClassVar[type[ChannelSection]]

    def send(self, envelope: Envelope) -> Receipt:
        """Deliver one notification; return once the server accepted it, else raise
        DeliveryError. Every network call has a timeout."""
        ...


def scrub(text: str, secrets: list[str | None]) -> str:
    """`text` with every secret (and a URL's path, which often is the secret) masked."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
            if "://" in secret:
                path = secret.split("://", 1)[1].partition("/")[2]
                if len(path) >= 6:
                    text = text.replace("/" + path, "/***")
    return text


@contextlib.contextmanager
def scrubbed_logs(names: list[str], secrets: list[str | None]) -> Iterator[logging.Logger]:
    """While sending, mask `secrets` in what the loggers `names` emit (third-party loggers:
    slack_sdk logs URLs at INFO); yields the first one."""

    def flt(record: logging.LogRecord) -> bool:
        record.msg = scrub(record.getMessage(), secrets)
        record.args = None
        return True

    loggers = [logging.getLogger(n) for n in names]
    for lg in loggers:
        lg.addFilter(flt)
    try:
        yield loggers[0]
    finally:
        for lg in loggers:
            lg.removeFilter(flt)


def describe(exc: BaseException) -> str:
    """A short reason for a network exception: `connection refused`, `timed out`, ..."""
    inner = getattr(exc, "reason", None)  # urllib's URLError wraps the socket error
    if isinstance(inner, BaseException):
        exc = inner
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}"


def channel_secret(env: str | None, file: str | None, what: str) -> str | None:
    """The secret in env var `env` or 0600 file `file`; a problem with it (unset, unsafe file)
    is a permanent DeliveryError naming `what`, never the secret."""
    try:
        return resolve_secret(env, file, what)
    except SecretError as exc:
        raise DeliveryError(exc.problems[0], permanent=True) from None


def unreachable(exc: BaseException, secrets: list[str | None]) -> DeliveryError:
    """The temporary DeliveryError for a connection error or timeout, `secrets` masked."""
    reason = scrub(f"{type(exc).__name__}: {exc}", secrets)
    return DeliveryError(reason[:300], permanent=False)


def http_refused(reason: str, resp: Any, *, temporary: bool) -> DeliveryError:
    """The DeliveryError for an HTTP answer that is not a success; a temporary one carries the
    answer's Retry-After (whole seconds) for the outbox."""
    if not temporary:
        return DeliveryError(reason, permanent=True)
    after = resp.headers.get("Retry-After") or ""
    wait = float(after) if after.isdigit() else None
    return DeliveryError(reason, permanent=False, retry_after=wait)
