"""Before the batch script restarts the training in place: was it a crash, is every node fit?

The batch script runs `rtool preflight --restart-after RC` when a launch of the training ended
with an exit code that is not a stop (docs/runs.md, "Restart in place"). This module decides,
from the launch's heartbeat, the job's memory cgroup, Slurm's node states and the job's log:

1. a launch that stopped on purpose (its heartbeat says finished, or stopped for the time
   limit, a signal, the kill switch, memory...: torchrun turns a rank's 85 into 1) is not
   restarted;
2. a restarted launch that made no progress (no step beyond the one it resumed at, by the
   heartbeat the shim wrote as the launch ended; a periodic one lags the steps and does not
   count) is not restarted again (it would only crash again);
3. a node Slurm shows down, drained or not responding, or that a node-level failure signature in
   the launch's log names (an XID, an ECC error, a lost GPU; never an NCCL timeout), is bad: the
   attempt ends with a requeue that excludes it (`rtool.nodes.preflight_job.requeue_away`);
4. then the pre-flight's checks run on every node, as before the first launch.

What ended the launch (`cause`): hung or peer_failed (the shim's heartbeat), oom_kill (the job's
cgroup counted a new OOM kill), crashed (an uncaught exception), signal, or the exit code.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rtool.core import cgroup
from rtool.core.heartbeat import Heartbeat, HeartbeatFormatError, RunState, read_heartbeat
from rtool.core.slurm.nodes import NodeState
from rtool.nodes.node_fault import blamed
from rtool.nodes.preflight_job import JobInfo
from rtool.runs import flight, signatures, stacks
from rtool.runs.inplace import RestartRecord
from rtool.runs.logtail import tail_lines

#: The line the batch script prints before each launch (what the log says after it is the
#: launch's own).
LAUNCH_MARK = "rtool: launch "
#: The shim's stops that end a launch without a save on purpose: restarted in place.
FAILED_STOPS = ("hung", "peer_failed")


@dataclass(frozen=True)
class Failed:
    """A launch of the training that ended, as the batch script saw it."""

    rc: int
    launch: int  # RTOOL_LAUNCH of the launch that ended (0: the attempt's first)
    heartbeat: Heartbeat | None  # that launch's, when it wrote one
    oom_kills: int | None = None  # the job's cgroup's OOM kills so far
    oom_before: int = 0  # ... at the previous restart of this attempt
    node_failure: str | None = None  # bad nodes replaced by spares (rtool submit --spare-nodes)

    @property
    def new_oom_kills(self) -> int:
        return max(0, (self.oom_kills or 0) - self.oom_before)

    def cause(self) -> tuple[str, str]:
        """(kind, detail): what ended the launch."""
        hb = self.heartbeat
        if self.node_failure:
            return "node_failure", self.node_failure
        if self.new_oom_kills:
            n = self.new_oom_kills
            return "oom_kill", f"killed by the OOM killer ({n} oom_kill in the job's cgroup)"
        if hb is not None and hb.state is RunState.STOPPED and hb.stop_reason in FAILED_STOPS:
            return str(hb.stop_reason), str(hb.stop_detail or "")
        if hb is not None and hb.state is RunState.CRASHED and hb.error is not None:
            return "crashed", str(hb.error)
        if self.rc > 128:
            try:
                name = signal.Signals(self.rc - 128).name
            except ValueError:
                name = str(self.rc - 128)
            return "signal", f"killed by {name} (exit code {self.rc})"
        return "exit", f"exit code {self.rc}"

    def stopped_on_purpose(self) -> str | None:
        """Why the launch is not a failure (finished, a stop of the shim), or None."""
        hb = self.heartbeat
        if hb is None:
            return None
        if hb.state is RunState.FINISHED:
            return "the training finished"
        if hb.state is RunState.STOPPED and hb.stop_reason not in FAILED_STOPS:
            return f"the training stopped ({hb.stop_reason}: {hb.stop_detail or '-'})"
        return None

    def no_progress(self) -> bool:
        """A restarted launch (launch >= 1) that ran no step past the one it resumed at, by its
        own last word: the heartbeat the shim wrote as it ended (crashed, or stopped hung or
        for a failed peer) names the last step it saw. A periodic heartbeat (written at most
        every few seconds while the loop moves) lags the steps, so a launch that died without
        its last word is not judged by it: it ran steps 0-4 in under 5 s and read step 0."""
        if self.launch < 1:
            return False
        hb = self.heartbeat
        if hb is None:
            return True  # it died before the shim's first heartbeat: not a step
        if hb.state not in (RunState.CRASHED, RunState.STOPPED):
            return False  # progress unknown: the restarts' bound and the crash loop judge it
        seen = [s for s in (hb.step, hb.stop_step, hb.last_saved_step) if s is not None]
        if not seen or hb.step_at_start is None:
            return True
        return max(seen) <= hb.step_at_start


def launch_heartbeat(path: str | None, info: JobInfo, launch: int) -> Heartbeat | None:
    """The heartbeat of this attempt's launch `launch`, or None (none, unreadable, another
    attempt's or launch's: an earlier one left it when this launch died before writing)."""
    if not path:
        return None
    try:
        hb = read_heartbeat(path)
    except HeartbeatFormatError:
        return None
    if hb is None or hb.launch != launch or hb.restart_count != info.restarts:
        return None
    shown = f"{hb.array_job_id}_{hb.array_task_id}" if hb.array_task_id else hb.job_id
    return hb if info.job_id in (shown, hb.job_id) else None


def job_oom_kills() -> int | None:
    """OOM kills counted by the memory cgroup that binds this job (None: no cgroup)."""
    found = cgroup.memory_of()
    return found.oom_kills if found is not None else None


def bad_states(states: Sequence[NodeState], nodes: Sequence[str]) -> dict[str, str]:
    """The job's nodes Slurm shows down, drained or not responding, with why."""
    out = {}
    for s in states:
        if s.name in nodes and s.is_bad and s.name not in out:
            why = f" ({s.reason})" if s.reason else ""
            out[s.name] = f"Slurm shows it {s.state}{why}"
    return out


def launch_log(text: str) -> tuple[str, ...]:
    """The log lines of the last launch (after the batch script's last launch line)."""
    last = text.rfind(LAUNCH_MARK)
    return tail_lines(text[last:] if last >= 0 else text, n=200)


def blamed_by_log(
    lines: Sequence[str], nodes: Sequence[str], extra: Sequence[signatures.Pattern] = ()
) -> dict[str, str]:
    """The nodes a node-level failure signature in the launch's log names, with the line."""
    sig = signatures.match(lines, "RUNNING", None, extra, nodes)
    if sig is None:
        return {}
    return {
        n: f"{sig.label}: {sig.line[:200]}" for n in blamed(nodes, sig.name, sig.line, sig.node)
    }


def record(
    env: Mapping[str, str], info: JobInfo, failed: Failed, now: float, launch: int
) -> RestartRecord:
    """The restart record of the launch `launch` about to start."""
    kind, detail = failed.cause()
    abort = env.get("RTOOL_ABORT_FILE")
    if kind in FAILED_STOPS and abort:  # where each rank was (their stack files)
        where = stacks.summary(stacks.read_stacks(abort, failed.launch))
        detail = f"{detail}; stacks: {where}" if where else detail
    detail = flight.appended(detail, abort, failed.launch, 500) or detail  # NCCL's dumps
    array, task = env.get("SLURM_ARRAY_JOB_ID"), env.get("SLURM_ARRAY_TASK_ID")
    return RestartRecord(
        job_id=env.get("SLURM_JOB_ID", ""),
        array_job_id=array if array and task else None,
        array_task_id=int(task) if array and task and task.isdigit() else None,
        restart=info.restarts,
        node=env.get("SLURMD_NODENAME", ""),
        nodelist=env.get("SLURM_JOB_NODELIST", ""),
        time=now,
        rc=failed.rc,
        launch=launch,
        cause=kind,
        detail=detail,
        heartbeat=failed.heartbeat,
        oom_kills=failed.oom_kills,
    )
