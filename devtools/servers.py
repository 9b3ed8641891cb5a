"""Local stand-ins for Slack, PagerDuty and an SMTP relay, on 127.0.0.1, for tests and the demo.

    slack = SlackLikeServer(token="xoxb-test", channels={"#alerts"}).start()
    slack.webhook_url     # http://127.0.0.1:PORT/services/T000/B000/<secret>  (incoming webhook)
    slack.api_url         # http://127.0.0.1:PORT/api/   (chat.postMessage for WebClient)
    slack.hook_url        # http://127.0.0.1:PORT/hook   (a generic JSON webhook)
    slack.mode = "ratelimit"   # ok|ratelimit|error|invalid_auth|channel_not_found|slow
    slack.script("error", "error")  # the next two requests fail, then `mode` again
    slack.stop(); slack.start()     # down (connection refused) and back, on the same port
    slack.accepted                  # requests answered ok, in order

    pd = PagerDutyLikeServer(routing_key="R0UT1NG...").start()
    pd.url                  # http://127.0.0.1:PORT/v2/enqueue  (Events API v2)
    pd.mode = "ratelimit"   # ok|ratelimit (429)|error (500)|invalid (400)
    pd.open                 # dedup_key -> the trigger of each open alert (resolve closes it)

    smtp = SmtpServer(mode="accept").start()   # accept | tempfail (451) | permfail (550) | slow
    smtp.messages                              # email.message.EmailMessage objects accepted

The SMTP server needs aiosmtpd (a dev dependency), imported only by SmtpServer.start().
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SLACK_MODES = ("ok", "ratelimit", "error", "invalid_auth", "channel_not_found", "slow")
SMTP_MODES = ("accept", "tempfail", "permfail", "slow")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SlackLikeServer:
    """Answers like Slack's incoming webhooks and Web API chat.postMessage."""

    def __init__(
        self,
        *,
        token: str = "xoxb-test-token",
        channels: set[str] | None = None,
        secret: str = "XXXXXXXXXXXXXXXXXXXXXXXX",
        retry_after: int = 1,
        delay: float = 30.0,
        port: int = 0,
    ) -> None:
        self.token, self.secret, self.retry_after, self.delay = token, secret, retry_after, delay
        self.channels = channels if channels is not None else {"#alerts"}
        self.port = port or free_port()
        self.mode = "ok"
        self.requests: list[dict[str, Any]] = []  # every request: path, body, answer
        self.accepted: list[dict[str, Any]] = []  # those answered ok
        self._script: deque[str] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._ts = 1700000000.0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def webhook_url(self) -> str:
        return f"{self.base}/services/T000/B000/{self.secret}"

    @property
    def api_url(self) -> str:
        return f"{self.base}/api/"

    @property
    def hook_url(self) -> str:
        return f"{self.base}/hook"

    def script(self, *modes: str) -> None:
        """Answer the next requests with `modes`, one each, then `self.mode` again."""
        with self._lock:
            self._script.extend(modes)

    def start(self) -> SlackLikeServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                owner._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        server = self._server
        threading.Thread(target=lambda: server.serve_forever(0.05), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> SlackLikeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_mode(self) -> str:
        with self._lock:
            return self._script.popleft() if self._script else self.mode

    def _handle(self, req: BaseHTTPRequestHandler) -> None:
        raw = req.rfile.read(int(req.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"raw": raw.decode(errors="replace")}
        mode = self._next_mode()
        if mode == "slow":
            time.sleep(self.delay)
            mode = "ok"
        api = req.path.startswith("/api/")
        if api and mode == "ok":
            mode = self._check_api(req, body)
        status, answer, headers = self._answer(mode, api, req.path)
        with self._lock:
            record = {"path": req.path, "body": body, "status": status, "answer": answer}
            self.requests.append(record)
            if mode == "ok":
                self.accepted.append(record)
        data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        req.send_response(status)
        for name, value in headers.items():
            req.send_header(name, value)
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

    def _check_api(self, req: BaseHTTPRequestHandler, body: dict[str, Any]) -> str:
        if req.headers.get("Authorization") != f"Bearer {self.token}":
            return "invalid_auth"
        if body.get("channel") not in self.channels:
            return "channel_not_found"
        return "ok"

    def _answer(self, mode: str, api: bool, path: str) -> tuple[int, Any, dict[str, str]]:
        text = {"Content-Type": "text/plain"}
        js = {"Content-Type": "application/json"}
        if mode == "ratelimit":
            hdr = {"Retry-After": str(self.retry_after)}
            return 429, ({"ok": False, "error": "ratelimited"} if api else b"rate_limited"), hdr
        if mode == "error":
            return 500, b"Internal Server Error", text
        if mode in ("invalid_auth", "channel_not_found"):
            if api:
                return 200, {"ok": False, "error": mode}, js
            return (403 if mode == "invalid_auth" else 404), mode.encode(), text
        if api:
            self._ts += 1
            return 200, {"ok": True, "channel": "C000", "ts": f"{self._ts:.6f}"}, js
        if path.startswith("/services/") and not path.endswith("/" + self.secret):
            return 404, b"no_service", text
        return 200, (b"ok" if path.startswith("/services/") else {"ok": True}), text


PD_MODES = ("ok", "ratelimit", "error", "invalid")
PD_ACTIONS = ("trigger", "acknowledge", "resolve")
PD_SEVERITIES = ("critical", "error", "warning", "info")


class PagerDutyLikeServer(SlackLikeServer):
    """Answers like PagerDuty's Events API v2 (`POST /v2/enqueue`): 202 with
    `{"status": "success", "message": "Event processed", "dedup_key": ...}` for a valid event;
    400 `{"status": "invalid event", "message": "Event object is invalid", "errors": [...]}`
    for a bad one (unknown routing key, bad action or severity, missing payload fields, a
    summary over 1024 or a dedup key over 255 characters); 429 and 500 by mode. Keeps the open
    alerts per dedup key like PagerDuty does (a trigger opens or updates, resolve closes)."""

    def __init__(self, *, routing_key: str = "R0UT1NGKEY00000000000000000000PD", **kw: Any):
        super().__init__(**kw)
        self.routing_key = routing_key
        self.open: dict[str, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []  # every accepted event, in order

    @property
    def url(self) -> str:
        return f"{self.base}/v2/enqueue"

    def _handle(self, req: BaseHTTPRequestHandler) -> None:
        raw = req.rfile.read(int(req.headers.get("Content-Length") or 0))
        mode = self._next_mode()
        try:
            body = json.loads(raw or b"")
        except ValueError:
            body = None
        if mode == "ok":
            status, answer = self._event(req.path, body)
        elif mode == "ratelimit":
            status, answer = (
                429,
                {
                    "status": "throttle event",
                    "message": "Requests for this "
                    "service are arriving too quickly. Please retry later.",
                },
            )
        elif mode == "error":
            status, answer = 500, {"status": "error", "message": "internal error"}
        else:
            status, answer = 400, _invalid(["forced invalid (test mode)"])
        with self._lock:
            self.requests.append({"path": req.path, "body": body, "status": status})
        data = json.dumps(answer).encode()
        req.send_response(status)
        req.send_header("Content-Type", "application/json")
        if status == 429:
            req.send_header("Retry-After", str(self.retry_after))
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

    def _event(self, path: str, body: Any) -> tuple[int, dict[str, Any]]:
        if path != "/v2/enqueue":
            return 404, {"status": "error", "message": "not found"}
        errors = _pd_errors(body, self.routing_key)
        if errors:
            return 400, _invalid(errors)
        action = body["event_action"]
        dedup = body.get("dedup_key") or f"rtool-test-{len(self.events) + 1:08d}"
        with self._lock:
            self.events.append(body)
            self.accepted.append({"path": path, "body": body})
            if action == "trigger":
                self.open[dedup] = body
            elif action == "resolve":
                self.open.pop(dedup, None)
        return 202, {"status": "success", "message": "Event processed", "dedup_key": dedup}


def _invalid(errors: list[str]) -> dict[str, Any]:
    return {"status": "invalid event", "message": "Event object is invalid", "errors": errors}


def _pd_errors(body: Any, routing_key: str) -> list[str]:
    if not isinstance(body, dict):
        return ["Event object is not a JSON object"]
    errors = []
    if body.get("routing_key") != routing_key:
        errors.append("'routing_key' is invalid")
    action = body.get("event_action")
    if action not in PD_ACTIONS:
        errors.append(
            "'event_action' is missing or blank" if not action else "'event_action' is invalid"
        )
    dedup = body.get("dedup_key")
    if dedup is not None and (not isinstance(dedup, str) or len(dedup) > 255):
        errors.append("'dedup_key' must be a string of at most 255 characters")
    if action in ("acknowledge", "resolve") and not dedup:
        errors.append("'dedup_key' is required for acknowledge and resolve events")
    if action == "trigger":
        payload = body.get("payload")
        if not isinstance(payload, dict):
            return [*errors, "'payload' is missing or blank"]
        for name in ("summary", "source", "severity"):
            if not payload.get(name):
                errors.append(f"'payload.{name}' is missing or blank")
        if len(str(payload.get("summary") or "")) > 1024:
            errors.append("'payload.summary' is longer than 1024 characters")
        if payload.get("severity") and payload["severity"] not in PD_SEVERITIES:
            errors.append("'payload.severity' is invalid")
    return errors


class SmtpServer:
    """A real SMTP server (aiosmtpd) that accepts, answers 451 / 550 after DATA, or stalls.

    mode "slow" stalls `delay` seconds at RCPT TO (before the message is transferred), and sets
    `stalled` when a client got there: a client killed then has delivered nothing.
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
            _SmtpHandler(self), hostname="127.0.0.1", port=self.port, ready_timeout=10, **kwargs
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


class _SmtpHandler:
    def __init__(self, owner: SmtpServer) -> None:
        self.owner = owner

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, opts: Any):  # type: ignore[no-untyped-def]
        import asyncio

        if self.owner.mode == "slow":
            self.owner.stalled.set()
            await asyncio.sleep(self.owner.delay)
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        import email
        import email.policy

        if self.owner.mode == "tempfail":
            return "451 4.3.0 Try again later"
        if self.owner.mode == "permfail":
            return "550 5.7.1 Relaying denied"
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.owner.messages.append(msg)
        return "250 OK: queued"
