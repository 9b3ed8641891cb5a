"""A local stand-in for PagerDuty's Events API v2."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from devtools.servers.slack import SlackLikeServer

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
        self.url = f"{self.base}/v2/enqueue"

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
            why = "Requests for this service are arriving too quickly. Please retry later."
            status, answer = 429, {"status": "throttle event", "message": why}
        elif mode == "error":
            status, answer = 500, {"status": "error", "message": "internal error"}
        else:
            status, answer = 400, _invalid(["forced invalid (test mode)"])
        with self._lock:
            self.requests.append({"path": req.path, "body": body, "status": status})
        headers = {"Content-Type": "application/json"}
        if status == 429:
            headers["Retry-After"] = str(self.retry_after)
        self._reply(req, status, answer, headers)

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
