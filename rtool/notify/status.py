"""What `rtool notify status` shows: outbox, per-channel deliveries, keys now alerting."""

from __future__ import annotations

from typing import Any

from rtool.core.state import StateDir
from rtool.core.units import format_duration, format_when
from rtool.notify.config import NotifyConfig
from rtool.notify.deliver import read_status
from rtool.notify.engine import key_states
from rtool.notify.outbox import Outbox


def collect(cfg: NotifyConfig, state: StateDir, now: float) -> dict[str, Any]:
    items = Outbox(state).items()
    channels = read_status(state)
    names = sorted(set(cfg.configured()) | set(channels) | {i.channel for i in items})
    return {
        "outbox": {
            "queued": len(items),
            "per_channel": {n: sum(1 for i in items if i.channel == n) for n in names},
            "oldest_age_s": round(now - items[0].created, 1) if items else None,
            "last_errors": {i.channel: i.last_error for i in items if i.last_error},
        },
        "channels": {
            n: {"configured": n in cfg.configured(), **channels.get(n, {})} for n in names
        },
        "alerting": {
            k: {
                "status": s.status,
                "since": s.since,
                "notified": s.notified,
                "summary": s.summary,
                "folded_into": s.folded_into or None,
            }
            for k, s in sorted(key_states(state).items())
            if s.status != "OK"
        },
        "now": now,
    }


def render(data: dict[str, Any]) -> str:
    now = data["now"]
    box = data["outbox"]
    lines = [f"outbox: {box['queued']} queued"]
    if box["oldest_age_s"] is not None:
        lines[0] += f", oldest {format_duration(box['oldest_age_s'])} old"
    for name, info in data["channels"].items():
        queued = box["per_channel"].get(name, 0)
        state = "" if info["configured"] else " (not configured)"
        lines.append(f"{name}{state}: {queued} queued, {info.get('sent', 0)} sent")
        lines.append(f"  last delivery: {format_when(info.get('last_ok'), now)}")
        if info.get("last_error"):
            when = format_when(info.get("last_error_time"), now)
            lines.append(f"  last error:    {when}: {info['last_error']}")
    alerting = data["alerting"]
    lines.append(f"alerting: {len(alerting)} key(s) not OK")
    for key, info in alerting.items():
        since = f" since {format_when(info['since'], now)}" if info["since"] else ""
        into = f" (folded into {info['folded_into']})" if info.get("folded_into") else ""
        lines.append(f"  {key} {info['status']}{since}{into}")
    return "\n".join(lines)
