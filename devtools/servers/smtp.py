"""A local SMTP relay (aiosmtpd, a dev dependency, imported only by SmtpServer.start())."""

from __future__ import annotations

import asyncio
import email
import email.policy
import threading
from typing import Any

from devtools.servers.slack import free_port

SMTP_MODES = ("accept", "tempfail", "permfail", "slow")


class SmtpServer:
    """A real SMTP server (aiosmtpd) that accepts, answers 451 / 550 after DATA, or stalls.

    mode "slow" stalls `delay` seconds at RCPT TO (before the message is transferred), and sets
    `stalled` when a client got there: a client killed then has delivered nothing. It is its own
    aiosmtpd handler (handle_RCPT, handle_DATA).
    """

    def __init__(
        self,
        mode: str = "accept",
        *,
        port: int = 0,
        delay: float = 30.0,
        auth: tuple[str, str] | None = None,
    ) -> None:
        self.mode, self.delay, self.auth = mode, delay, auth
        self.port = port or free_port()
        self.messages: list[Any] = []
        self.stalled = threading.Event()
        self._controller: Any = None

    def start(self) -> SmtpServer:
        from aiosmtpd.controller import Controller

        kwargs: dict[str, Any] = {}
        if self.auth:
            kwargs = {"auth_require_tls": False, "authenticator": self._authenticate}
        self._controller = Controller(
            self, hostname="127.0.0.1", port=self.port, ready_timeout=10, **kwargs
        )
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def __enter__(self) -> SmtpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _authenticate(self, server: Any, session: Any, envelope: Any, mech: str, data: Any) -> Any:
        from aiosmtpd.smtp import AuthResult, LoginPassword

        ok = isinstance(data, LoginPassword) and self.auth == (
            data.login.decode(),
            data.password.decode(),
        )
        return AuthResult(success=ok, handled=False, auth_data=data if ok else None)

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, opts: Any
    ) -> str:
        if self.mode == "slow":
            self.stalled.set()
            await asyncio.sleep(self.delay)
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.mode == "tempfail":
            return "451 4.3.0 Try again later"
        if self.mode == "permfail":
            return "550 5.7.1 Relaying denied"
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.messages.append(msg)
        return "250 OK: queued"
