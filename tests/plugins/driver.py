"""Run inside a copy of the tree that has one new plug-in (test_kinds.py starts it):
`python driver.py KIND WORKDIR` prints one JSON object of what the CLI, the config, the docs
tables and the plug-in contract say about it. Everything here is the copy's rtool (PYTHONPATH
puts the copy first; `rtool_file` in the result says which was imported).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.plugins import contract

run_cli = contract.run_cli


def config(work: Path, text: str) -> str:
    path = work / f"rtool-{abs(hash(text))}.toml"
    path.write_text(text)
    return str(path)


def check_config(path: str) -> tuple[int, str]:
    code, out, err = run_cli("--config", path, "config", "check")
    return code, out + err


def watchdog(work: Path) -> dict[str, Any]:
    from rtool.watchdogs.registry import by_name
    from tests.app import reference

    ckpt = work / "ckpt"
    ckpt.mkdir()
    old = ckpt / "step-100.pt"
    old.write_text("weights")
    three_hours_ago = time.time() - 3 * 3600
    os.utime(old, (three_hours_ago, three_hours_ago))
    pattern = str(ckpt / "step-*.pt")
    good = config(work, f'[[watch.ckpt]]\npath = "{pattern}"\nmax_age = "4h"\n')
    bad = config(work, f'[[watch.ckpt]]\npath = "{pattern}"\nbogus = 1\n')
    return {
        "group_help": run_cli("watch", "--help"),
        "help": run_cli("watch", "ckpt", "--help"),
        "stale": run_cli("watch", "ckpt", pattern, "--no-notify"),
        "fresh": run_cli("watch", "ckpt", pattern, "--max-age", "4h", "--no-notify"),
        "missing": run_cli("watch", "ckpt", str(work / "none-*.pt"), "--no-notify"),
        "timeout": run_cli("watch", "ckpt", pattern, "--timeout", "5s", "--no-notify"),
        "config_ok": check_config(good),
        "config_bad": check_config(bad),
        "all": run_cli("--config", good, "watch", "all", "--no-notify"),
        "docs": reference.render("watchdogs") + reference.render("watch-options"),
        "contract": contract.watchdog(by_name("ckpt")),
    }


def check(work: Path) -> dict[str, Any]:
    from rtool.nodes.preflight import registry
    from rtool.nodes.preflight.node import settings_argv
    from tests.app import reference

    (work / "train.py").write_text("print('training')\n")
    asked = config(work, "[nodes.preflight]\nmax_load = 1000\n")
    bad = config(work, '[nodes.preflight]\nmax_load = "lots"\n')
    node = subprocess.run(
        [sys.executable, "-m", "rtool.nodes.preflight", "--max-load", "1000", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return {
        "help": run_cli("preflight", "--help"),
        "healthy": run_cli("preflight", "--here", "--max-load", "1000"),
        "busy": run_cli("preflight", "--here", "--max-load", "0"),
        "from_config": run_cli("--config", asked, "preflight", "--here"),
        "config_ok": check_config(asked),
        "config_bad": check_config(bad),
        "node_side": [node.returncode, node.stdout, node.stderr],
        "node_argv": settings_argv({"max_load": 2.5}),
        "submit_asked": run_cli("--config", asked, "submit", "train.py", "--dry-run"),
        "submit_plain": run_cli("submit", "train.py", "--dry-run"),
        "docs": reference.render("preflight-checks") + reference.render("preflight-keys"),
        "contract": contract.check(registry.CHECKS["load"]),
    }


def channel(work: Path) -> dict[str, Any]:
    from rtool.notify.channels import by_name
    from tests.app import reference

    out = work / "alerts.jsonl"
    good = config(work, f'[notify]\nfallback = "jsonl"\n[notify.jsonl]\npath = "{out}"\n')
    bad = config(work, f'[notify.jsonl]\npath = "{out}"\nbogus = 1\n')
    result: dict[str, Any] = {
        "help": run_cli("notify", "test", "--help"),
        "config_ok": check_config(good),
        "config_bad": check_config(bad),
        "test": run_cli("--config", good, "notify", "test", "--channel", "jsonl"),
    }
    result["alert"] = run_cli("--config", good, "watch", "disk", str(work), "--max-used", "0.001%")
    result["lines"] = out.read_text().splitlines() if out.exists() else []
    result["docs"] = reference.render("channels")
    result["contract"] = contract.channel(by_name("jsonl"))
    return result


def watch_command(work: Path) -> dict[str, Any]:
    from tests.app import reference

    os.chdir(work)
    return {
        "group_help": run_cli("watch", "--help"),
        "run": run_cli("watch", "here", "--no-notify"),
        "docs": reference.render("watchdogs"),
        "contract": contract.watch_command("here"),
    }


def command(work: Path) -> dict[str, Any]:
    from tests.app import reference

    return {
        "root_help": run_cli("--help"),
        "help": run_cli("where", "--help"),
        "run": run_cli("where"),
        "docs": reference.render("commands"),
        "contract": contract.command("where"),
    }


def signature(work: Path) -> dict[str, Any]:
    """An attempt whose log has the new signature's line among symptoms: its root cause, the
    node made suspect, as `rtool watch run` and `rtool nodes` would see them."""
    from rtool.core.state import StateDir
    from rtool.nodes import node_fault
    from rtool.nodes.store import SuspectStore
    from rtool.runs import ledger, signatures
    from rtool.runs.model import Attempt
    from rtool.watchdogs.jobnodes import record_signatures

    tail = (
        "step 1200 loss 2.31",
        "[ 8123.456789] mlx5_core 0000:81:00.0 ib0: Link down",
        "RuntimeError: NCCL communicator was aborted on rank 3.",
    )
    died = Attempt(run="r", number=1, job_id="77", nodes=("n2",), state="FAILED")
    (signed,) = ledger._signatures([died.with_(log_tail=tail, ended=time.time())], None, ())
    store = SuspectStore(StateDir(work / "state"))
    store.record_many(record_signatures([signed]))
    sig = signed.signature
    return {
        "signature": None if sig is None else [sig.name, sig.label, sig.line, sig.action],
        "suspects": [s.node for s in store.suspects()],
        "names": signatures.SIGNATURES.names(),
        "node_level": sorted(node_fault.NODE_LEVEL),
        "contract": contract.signature(signatures.SIGNATURES["ib-down"]),
    }


def section(work: Path) -> dict[str, Any]:
    from rtool.app.plumbing.defaults import DefaultConfig
    from rtool.app.plumbing.sections import SECTIONS, config_field

    good = config(work, '[site]\nscratch = "/lustre/me"\nmax_jobs = 3\n')
    bad = config(work, '[site]\nmax_jobs = "many"\nbogus = 1\n')
    return {
        "config_ok": check_config(good),
        "config_bad": check_config(bad),
        "show": run_cli("--config", good, "config", "show"),
        "show_defaults": run_cli("--no-config", "config", "show"),
        "defaults": DefaultConfig().site.model_dump(),
        "field_help": config_field("site.max_jobs")[1].description,
        "contract": contract.section("site", SECTIONS["site"]),
    }


DRIVERS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "watchdog": watchdog,
    "check": check,
    "channel": channel,
    "watch-command": watch_command,
    "command": command,
    "signature": signature,
    "section": section,
}


def main() -> None:
    import rtool

    kind, work = sys.argv[1], Path(sys.argv[2])
    result = DRIVERS[kind](work)
    result["rtool_file"] = rtool.__file__
    print(json.dumps(result))


if __name__ == "__main__":
    main()
