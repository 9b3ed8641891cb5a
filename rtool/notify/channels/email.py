"""The email channel: stdlib smtplib, STARTTLS or implicit TLS, optional login.

A mail counts as sent once the server answered 250 after DATA. SMTP 4xx, connection errors and
timeouts are temporary; 5xx (and a refused login) are permanent. Every mail has a Message-Id;
later mails of the same incident (changes, repeats, the resolved notice) thread under the first
one with In-Reply-To / References.
"""

from __future__ import annotations

import email.utils
from email.message import EmailMessage
from typing import TYPE_CHECKING

from rtool.core.config.fields import setting
from rtool.notify.channels.base import (
    ChannelSection,
    DeliveryError,
    Envelope,
    Receipt,
    channel_secret,
    describe,
    scrub,
)
from rtool.notify.channels.notification import Notification, body, subject

if TYPE_CHECKING:
    import smtplib


def message_id(nid: str, sender: str) -> str:
    domain = sender.rpartition("@")[2] or "rtool.invalid"
    return f"<rtool.{nid}@{domain}>"


def build_message(cfg: EmailConfig, env: Envelope) -> EmailMessage:
    n: Notification = env.notification
    msg = EmailMessage()
    msg["Subject"] = subject(n)
    msg["From"] = cfg.sender
    msg["To"] = ", ".join(cfg.to)
    msg["Date"] = email.utils.formatdate(n.time or None, localtime=True)
    msg["Message-Id"] = message_id(n.id, cfg.sender)
    if n.incident and n.incident != n.id:
        root = message_id(n.incident, cfg.sender)
        msg["In-Reply-To"] = root
        msg["References"] = root
    msg["X-Rtool-Key"] = n.key
    msg["X-Rtool-Status"] = n.label
    msg.set_content(body(n, env.note))
    return msg


class EmailConfig(ChannelSection):
    host: str = setting(..., "The SMTP server.")
    port: int = setting(587, "Its port.", ge=1, le=65535)
    starttls: bool = setting(True, "STARTTLS after connecting (port 587).")
    ssl: bool = setting(False, "Implicit TLS from the first byte (port 465); starttls is ignored.")
    sender: str = setting(..., "The From address.")
    to: list[str] = setting(..., "The recipients.", min_length=1)
    username: str | None = setting(None, "SMTP login (none: no login).")
    password_env: str | None = setting(None, "The env var holding the SMTP password.")
    password_file: str | None = setting(None, "... or the 0600 file holding it.")


class EmailChannel:
    """Email through your SMTP server; replies and resolved notices thread under the alert."""

    name = "email"
    config = EmailConfig

    def __init__(self, cfg: EmailConfig) -> None:
        self.cfg = cfg

    def send(self, envelope: Envelope) -> Receipt:
        import smtplib

        password = channel_secret(self.cfg.password_env, self.cfg.password_file, "email password")
        msg = build_message(self.cfg, envelope)
        try:
            with self._connect() as smtp:
                if self.cfg.username and password is not None:
                    smtp.login(self.cfg.username, password)
                refused = smtp.send_message(msg, from_addr=self.cfg.sender, to_addrs=self.cfg.to)
        except smtplib.SMTPRecipientsRefused as exc:
            codes = [code for code, _ in exc.recipients.values()]
            raise DeliveryError(
                f"every recipient refused (SMTP {codes[0] if codes else '?'})",
                permanent=all(c >= 500 for c in codes),
            ) from None
        except smtplib.SMTPResponseException as exc:
            raise self._response_error(exc, password) from None
        except smtplib.SMTPNotSupportedError as exc:
            raise DeliveryError(f"SMTP server: {exc}", permanent=True) from None
        except (smtplib.SMTPException, OSError) as exc:
            reason = scrub(describe(exc), [password])
            raise DeliveryError(reason, permanent=False) from None
        detail = f"refused for {sorted(refused)}" if refused else "250 accepted"
        return Receipt(ref=msg["Message-Id"], detail=detail)

    def _connect(self) -> smtplib.SMTP:
        import smtplib
        import ssl

        cfg = self.cfg
        if cfg.ssl:
            ctx = ssl.create_default_context()
            return smtplib.SMTP_SSL(cfg.host, cfg.port, timeout=cfg.timeout, context=ctx)
        smtp = smtplib.SMTP(cfg.host, cfg.port, timeout=cfg.timeout)
        try:
            if cfg.starttls:
                smtp.starttls(context=ssl.create_default_context())
        except BaseException:
            smtp.close()
            raise
        return smtp

    def _response_error(self, exc: smtplib.SMTPResponseException, pw: str | None) -> DeliveryError:
        text = exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else ""
        reason = scrub(f"SMTP {exc.smtp_code} {text}".strip(), [pw])
        if exc.smtp_code == 535:
            reason = f"SMTP {exc.smtp_code}: login refused for user {self.cfg.username}"
        return DeliveryError(reason, permanent=exc.smtp_code >= 500)
