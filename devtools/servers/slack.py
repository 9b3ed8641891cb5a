"""A local stand-in for Slack: incoming webhooks, chat.postMessage, a generic JSON hook."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SLACK_MODES = ("ok", "ratelimit", "error", "invalid_auth", "channel_not_found", "slow")


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
        self.base = f"http://127.0.0.1:{self.port}"
        self.webhook_url = f"{self.base}/services/T000/B000/{self.secret}"
        self.api_url = f"{self.base}/api/"
        self.hook_url = f"{self.base}/hook"

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

        server = self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
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
        if api and mode == "ok":  # the Web API checks the token, then the channel
            if req.headers.get("Authorization") != f"Bearer {self.token}":
                mode = "invalid_auth"
            elif body.get("channel") not in self.channels:
                mode = "channel_not_found"
        status, answer, headers = self._answer(mode, api, req.path)
        with self._lock:
            record = {"path": req.path, "body": body, "status": status, "answer": answer}
            self.requests.append(record)
            if mode == "ok":
                self.accepted.append(record)
        self._reply(req, status, answer, headers)

    @staticmethod
    def _reply(
        req: BaseHTTPRequestHandler, status: int, answer: Any, headers: dict[str, str]
    ) -> None:
        """Send `answer` (bytes as they are, anything else as JSON) with `headers`."""
        data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        req.send_response(status)
        for name, value in headers.items():
            req.send_header(name, value)
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

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
