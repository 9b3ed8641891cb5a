"""The demo's moving parts: the Slurm cluster, rtool calls, and what it reads back.

`Demo` holds the workspace, the narrator and the inbox; the scenario steps (steps.py) use its
helpers. Every rtool call is a real `rtool` process (bin/rtool in the workspace), shown as the
command a user would type.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devtools.demo.inbox import Inbox
from devtools.demo.narrate import Narrator
from devtools.demo.observe import (
    OutputInfo,
    RunInfo,
    StepLine,
    parse_output,
    parse_steps,
    read_text,
)
from devtools.demo.workspace import LIMIT, TRAIN, Timing, Workspace, locate_toy
from devtools.localslurm import control
from rtool.core.errors import RtoolError
from rtool.core.proc import ProcError, run
from rtool.core.slurm import Slurm, SlurmError, SqueueJob


class StepFailed(Exception):
    """A scenario step could not go on; the message says what went wrong."""


@dataclass
class Event:
    name: str
    ok: bool
    detail: str
    at: float  # seconds since the demo started
    data: dict[str, Any] = field(default_factory=dict)


def ensure_slurm(n: Narrator) -> Path | None:
    """Use the reachable Slurm, else start the local one; returns its dir if the demo started it."""
    if shutil.which("scontrol") and Slurm(timeout=15).ping():
        where = os.environ.get("SLURM_CONF", "the default slurm.conf")
        n.ok(f"Slurm is reachable ({where})")
        return None
    cluster = control.Cluster(control.DEFAULT_DIR.resolve())
    was_up = control.status(cluster) is not None
    n.say(f"no Slurm reachable: starting the local Slurm (3 nodes, accounting) in {cluster.dir}")
    try:
        cluster = control.up(cluster.dir)
    except control.LocalSlurmError as exc:
        raise RtoolError(f"cannot start the local Slurm: {exc}") from None
    os.environ["SLURM_CONF"] = str(cluster.conf)
    os.environ["PATH"] = cluster.release.path_env()  # its clients, not another release's
    n.ok(f"local Slurm is up: {control.status(cluster)} (export SLURM_CONF={cluster.conf})")
    return None if was_up else cluster.dir


def local_cluster() -> control.Cluster | None:
    """The local test cluster SLURM_CONF points to (a control.Cluster), or None: only
    there can the demo fail a node. Its folder must be ours (owned by us, not group/world
    writable), as the demo kills processes it finds through it."""
    conf = Path(os.environ.get("SLURM_CONF", ""))
    if conf.name != "slurm.conf" or not (conf.parent / "cluster.json").is_file():
        return None
    try:
        st = conf.parent.stat()
    except OSError:
        return None
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return None
    cluster = control.Cluster(conf.parent.resolve())
    return cluster if len(cluster.nodes) >= 3 else None


class Demo:
    def __init__(self, ws: Workspace, timing: Timing, narrator: Narrator, inbox: Inbox) -> None:
        self.ws, self.t, self.n, self.inbox = ws, timing, narrator, inbox
        self.slurm = Slurm(timeout=30)
        self.toy = locate_toy()
        self.env = {"RTOOL_CONFIG": str(ws.config), "PYTHONUNBUFFERED": "1"}
        self.ids: dict[str, str] = {}  # job name -> array job id
        self.cluster = local_cluster()  # a local multi-node cluster: the node-failure scene
        self.events: list[Event] = []
        self._watch_lines = 0
        self._watch_status: str | None = None
        narrator.background = self.background

    # -- rtool and Slurm ------------------------------------------------------------------

    def rtool(self, *args: str, shown: str | None = None, cwd: Path | None = None) -> str:
        """Run `rtool ARGS` (this interpreter's) with the demo's config; StepFailed if it fails."""
        text = shown or "rtool " + shlex.join(args)
        self.n.command(text)
        try:
            res = run(
                [str(self.ws.rtool), *args],
                timeout=90,
                check=False,
                env=self.env,
                cwd=str(cwd or self.ws.root),
            )
        except ProcError as exc:
            raise StepFailed(f"{text}: {exc}") from None
        if res.returncode != 0:
            why = (res.stderr.strip() or res.stdout.strip()).splitlines()
            raise StepFailed(f"{text} exited {res.returncode}: {why[-1] if why else ''}")
        return res.stdout

    def submit(
        self,
        name: str,
        tasks: int,
        toy_args: list[str],
        time_limit: str,
        sig: str,
        sbatch_extra: tuple[str, ...] = (),
    ) -> str:
        array, heartbeat = f"0-{tasks - 1}%1", str(self.ws.run_dir(name) / "heartbeat.json")
        args = ["submit", str(self.toy), "--array", array, "--time", time_limit, "--signal", sig]
        args += ["--job-name", name, "--heartbeat", heartbeat]
        # --hang-after off: the hang scene shows the cron log watchdog's part (the backstop)
        args += ["--hang-after", "off", "--args", shlex.join(toy_args), "--parsable"]
        # --open-mode=append: a requeued task appends to its output instead of wiping it
        args += ["--", "--open-mode=append", *sbatch_extra]
        shown = (
            f"rtool submit train_toy.py --array {array} --time {time_limit} "
            f"--signal {sig} --job-name {name} --args '{' '.join(toy_args[:4])} ...'"
        )
        job_id = self.rtool(*args, shown=shown, cwd=self.ws.job_dir(name)).strip()
        self.ids[name] = job_id
        return job_id

    def jobs(self, name: str) -> list[SqueueJob]:
        try:
            return self.slurm.squeue(names=[name])
        except SlurmError:
            return []

    def active(self, name: str) -> bool:
        done = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"}
        return any(j.state not in done for j in self.jobs(name))

    def tasks(self, name: str) -> dict[str, dict[str, str]]:
        """`scontrol show job` record of every task of the array, by task id."""
        try:
            records = self.slurm.show_job(self.ids[name])
        except (SlurmError, KeyError):
            return {}
        return {r.get("ArrayTaskId", ""): r for r in records}

    def check_no_leftovers(self) -> None:
        for name in (LIMIT, TRAIN):
            if self.active(name):
                raise RtoolError(
                    f"jobs named {name} are still queued from an earlier demo; "
                    f"cancel them first: scancel --name {name}"
                )

    # -- what the toy wrote ---------------------------------------------------------------

    def steps(self, name: str) -> list[StepLine]:
        return parse_steps(read_text(self.ws.run_dir(name) / "steps.log"))

    def outputs(self, name: str) -> list[OutputInfo]:
        return [parse_output(read_text(path)) for path in self.ws.outputs(name)]

    def run_of(self, name: str, pid: int) -> RunInfo | None:
        return next((r for out in self.outputs(name) for r in out.runs if r.pid == pid), None)

    def runs(self, name: str) -> list[tuple[int, str, int]]:
        """(pid, task, first step) of each run, in the order they trained."""
        seen: dict[int, tuple[int, str, int]] = {}
        for s in self.steps(name):
            seen.setdefault(s.pid, (s.pid, s.task, s.step))
        return list(seen.values())

    def run_after(self, name: str, pid: int) -> tuple[int, str, int] | None:
        """The run that trained after run `pid`, once there is one."""
        pids = [r[0] for r in self.runs(name)]
        after = pids.index(pid) + 1 if pid in pids else len(pids)
        return self.runs(name)[after] if after < len(pids) else None

    def last_step(self, name: str, pid: int) -> int:
        return max((s.step for s in self.steps(name) if s.pid == pid), default=-1)

    def checkpoint(self, name: str) -> dict[str, Any]:
        try:
            data = json.loads((self.ws.run_dir(name) / "checkpoint.json").read_text())
        except (FileNotFoundError, ValueError):
            return {"step": -1}
        return data if isinstance(data, dict) else {"step": -1}

    # -- printed as it arrives ------------------------------------------------------------

    def background(self) -> None:
        grouped: dict[str, list[str]] = {}
        for m in self.inbox.new():
            grouped.setdefault(m.title, []).append(m.channel)
        for title, channels in grouped.items():
            self.n.alert(", ".join(channels), title)
        self._watch_news()

    def _watch_news(self) -> None:
        lines = read_text(self.ws.watch_log).splitlines()
        for line in lines[self._watch_lines :]:
            words = line.split(" ", 4)  # stamp, LOG, STATUS, -, text
            status = words[2] if len(words) > 2 else None
            if status != self._watch_status:
                self._watch_status = status
                self.n.note(f"cron tick → {line.split(' ', 1)[-1]}")
        self._watch_lines = len(lines)

    def record(self, name: str, ok: bool, detail: str, **data: Any) -> Event:
        ev = Event(name, ok, detail, round(self.n.elapsed(), 1), data)
        self.events.append(ev)
        (self.n.ok if ok else self.n.fail)(detail)
        return ev
