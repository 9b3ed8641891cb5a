"""Memory judged against the job's cgroup limit (rtool.core.cgroup), on a real memory cgroup
this test creates: the limit found from a process inside it (on its ancestors too), the shim's
`max_memory_used` taken as a share of that limit (not of the host's RAM), an OOM kill counted
and named by `rtool watch memory --job` and by the check before an in-place restart.

The cgroup is v2 where the unified hierarchy offers the memory controller, else v1 (this
machine: a hybrid layout whose memory controller is on v1). The v2 files are also read from a
folder laid out like one (the parsers are the same for a real one)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rtool.core import cgroup
from rtool.nodes.restart import Failed
from tests.helpers import wait_for

MiB = 1024 * 1024
LIMIT = 64 * MiB


@dataclass
class Group:
    folder: Path
    version: int

    def add(self, pid: int) -> None:
        (self.folder / "cgroup.procs").write_text(str(pid))


def _make(tmp: str) -> Group:
    """A memory cgroup limited to LIMIT (v2 if the unified hierarchy has memory, else v1)."""
    mounts = cgroup.parse_mountinfo(Path("/proc/self/mountinfo").read_text())
    for mount in sorted(mounts, key=lambda m: -m.version):
        top = Path(mount.point)
        if mount.version == 2:
            if "memory" not in (top / "cgroup.controllers").read_text().split():
                continue
            with contextlib.suppress(OSError):
                (top / "cgroup.subtree_control").write_text("+memory")
        folder = top / tmp
        try:
            folder.mkdir()
            limit_file = "memory.max" if mount.version == 2 else "memory.limit_in_bytes"
            (folder / limit_file).write_text(str(LIMIT))
        except OSError as exc:
            with contextlib.suppress(OSError):
                folder.rmdir()
            pytest.fail(f"cannot make a memory cgroup under {top}: {exc}")
        return Group(folder, mount.version)
    pytest.fail("no cgroup hierarchy with the memory controller (v2 or v1) is mounted here")


@pytest.fixture
def group() -> Iterator[Group]:
    g = _make(f"rtool-test-{uuid.uuid4().hex[:8]}")
    procs: list[subprocess.Popen[str]] = []
    g.procs = procs  # type: ignore[attr-defined]
    yield g
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=30)
    deadline = time.monotonic() + 20
    while True:
        try:
            g.folder.rmdir()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


HOLD = """
import os, sys, time
sys.stdin.readline()  # moved into the cgroup by now
data = bytearray(int(sys.argv[1]) * 1024 * 1024)
for i in range(0, len(data), 4096):
    data[i] = 1
print("ready", flush=True)
time.sleep(600)
"""


def _start(g: Group, mib: int, **env: str) -> subprocess.Popen[str]:
    """A process in the cgroup holding `mib` MiB (it allocates once moved in)."""
    full = {**os.environ, **env}
    p = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(mib)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=full,
    )
    g.procs.append(p)  # type: ignore[attr-defined]
    g.add(p.pid)
    assert p.stdin is not None
    p.stdin.write("go\n")
    p.stdin.flush()
    return p


def test_the_limit_that_binds_a_process_is_found_with_its_usage(group: Group) -> None:
    p = _start(group, 40)
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    got = cgroup.memory_of(p.pid, host=1 << 50)
    assert got is not None and got.folder == str(group.folder) and got.version == group.version
    assert got.limit == LIMIT and 38 * MiB <= got.usage <= LIMIT
    assert got.percent is not None and 55 < got.percent < 100 and got.oom_kills == 0
    # a limit at or above the host's RAM is no limit: the host is judged then
    assert cgroup.memory_of(p.pid, host=LIMIT) is not None
    assert cgroup.memory_of(p.pid, host=LIMIT).limit is None  # type: ignore[union-attr]


GUARD = """
import sys, time
data = bytearray(40 * 1024 * 1024)
for i in range(0, len(data), 4096):
    data[i] = 1
from rtool.shim import Guard
g = Guard(lambda s: None, max_memory_used="50%", poll_interval=0.05, exit=False)
for step in range(400):
    d = g.step(step)
    if d.stopping:
        print("STOP", d.reason, d.detail, flush=True)
        break
    time.sleep(0.01)
"""


def test_the_shim_judges_memory_against_the_job_limit_not_the_host(group: Group) -> None:
    # the guard is made inside the cgroup: 40 of 64 MiB is over 50%, of 24 GiB it is nothing
    root = str(Path(__file__).resolve().parents[2])
    starter = "import os,sys; sys.stdin.readline(); os.execv(sys.executable, sys.argv[1:])"
    p = subprocess.Popen(
        [sys.executable, "-c", starter, sys.executable, "-c", GUARD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": root},
    )
    group.procs.append(p)  # type: ignore[attr-defined]
    group.add(p.pid)
    out, _ = p.communicate("go\n", timeout=60)
    assert "STOP memory job memory (cgroup" in out, out
    assert "64.0MiB" in out and "(limit 50%)" in out, out


def _kills(g: Group) -> int:
    got = cgroup.read_folder(str(g.folder), g.version, None)
    return got.oom_kills or 0 if got is not None else 0


def test_an_oom_kill_is_named_by_the_memory_watchdog_and_the_restart_check(
    group: Group, cli: object, tmp_path: Path
) -> None:
    keeper = _start(group, 8, SLURM_JOB_ID="777001")
    assert keeper.stdout is not None and keeper.stdout.readline().strip() == "ready"
    res = cli("watch", "memory", "--job", "777001", "--max-used", "99%")  # type: ignore[operator]
    assert res.code == 0 and "job:777001" in res.out and "of its memory limit used" in res.out
    hog = _start(group, 100, SLURM_JOB_ID="777001")  # more than the 64 MiB limit: killed
    hog.wait(timeout=60)
    assert hog.returncode == -signal.SIGKILL
    wait_for(lambda: (cgroup.read_folder(str(group.folder), group.version, None) or 0)
             and cgroup.read_folder(str(group.folder), group.version, None).oom_kills, 10, 0.2,  # type: ignore[union-attr]
             "the kernel to count the OOM kill")  # fmt: skip
    res = cli("watch", "memory", "--job", "777001", "--max-used", "99%")  # type: ignore[operator]
    assert (
        res.code == 2 and "job:777001 OOM kill: 1 process(es) killed by the OOM killer" in res.out
    )
    # the check before an in-place restart names it too
    kills = cgroup.read_folder(str(group.folder), group.version, None).oom_kills  # type: ignore[union-attr]
    kind, detail = Failed(137, 0, None, kills, 0).cause()
    assert kind == "oom_kill" and "killed by the OOM killer (1 oom_kill" in detail
    assert Failed(137, 0, None, kills, kills).cause()[0] == "signal"  # an older kill: not this one


def test_v2_files_and_the_parsers(tmp_path: Path) -> None:
    """The v2 file formats (the test machine's v2 hierarchy has no memory controller)."""
    job = tmp_path / "job_42"
    task = job / "step_0" / "task_0"
    task.mkdir(parents=True)
    (job / "memory.max").write_text(f"{LIMIT}\n")
    (job / "memory.current").write_text(f"{50 * MiB}\n")
    (job / "memory.stat").write_text(f"anon {40 * MiB}\ninactive_file {10 * MiB}\n")
    (job / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\n")
    for d in (task, task.parent):
        (d / "memory.max").write_text("max\n")
        (d / "memory.current").write_text(f"{40 * MiB}\n")
    got = cgroup.binding(str(task), 2, str(tmp_path), host=1 << 40)
    assert got is not None and got.folder == str(job) and got.limit == LIMIT
    assert got.usage == 40 * MiB and got.oom_kills == 2 and got.where == "memory.max"
    info = (
        "36 25 0:31 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
        "40 30 0:35 /slurm /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "41 30 0:36 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
    )
    assert cgroup.parse_mountinfo(info) == [
        cgroup.Mount(2, "/sys/fs/cgroup", "/"),
        cgroup.Mount(1, "/sys/fs/cgroup/memory", "/slurm"),
    ]
    paths = cgroup.parse_proc_cgroup("0::/system.slice/job_42/step_0\n4:memory:/slurm/job_42\n")
    assert paths == {2: "/system.slice/job_42/step_0", 1: "/slurm/job_42"}
    assert cgroup.parse_limit("max", None) is None
    assert cgroup.parse_limit("9223372036854771712", None) is None
    assert (
        cgroup.parse_limit(str(LIMIT), LIMIT) is None and cgroup.parse_limit("4096", None) == 4096
    )
