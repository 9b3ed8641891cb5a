"""Capture what Slurm prints, for the pure parser tests (tests/core/test_captured.py).

    RTOOL_TEST_SLURM=24.11 python -m tests.core.captured.capture   # into tests/core/captured/24.11

Starts a local 3-node cluster with accounting of the chosen release in a temp folder, puts
jobs in the states rtool reads (running, pending on a drained node, a throttled array, held,
begin time, dependency, no time limit; completed, failed, cancelled before and while running,
timeout, killed by a signal, node failure and requeue), and saves what squeue, scontrol, sinfo
and sacct print with the formats rtool uses. Jobs are found again by name (`cap-...`), not by
id. About two minutes (the TIMEOUT job waits for its one-minute limit).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from devtools.localslurm import control, releases
from rtool.core.slurm.nodes import SINFO_FORMAT
from rtool.core.slurm.parse import SQUEUE_FORMAT
from rtool.core.slurm.sacct import SACCT_FORMAT

HERE = Path(__file__).resolve().parent
QUEUED = ["cap-run", "cap-nolimit", "cap-array", "cap-held", "cap-begin", "cap-dep", "cap-drained"]
QUEUED += ["cap-cancel-pend"]
ENDED = ["cap-done", "cap-fail", "cap-cancel-run", "cap-timeout", "cap-signal", "cap-nodefail"]


def run(*argv: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    if check and res.returncode != 0:
        raise RuntimeError(f"{argv}: {res.returncode} {res.stderr}")
    return res.stdout


def sbatch(name: str, *opts: str, body: str = "sleep 600") -> str:
    return run("sbatch", "--parsable", "-J", name, "-o", "/dev/null", *opts, "--wrap", body).strip()


def job_ids(name: str) -> list[str]:
    return run("squeue", "-h", "-o", "%A", "-n", name).split()


def wait(what: str, cond: object, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(1)


def state(job: str) -> str:
    out = run("scontrol", "-o", "show", "job", job, check=False)
    return next((w.split("=")[1] for w in out.split() if w.startswith("JobState=")), "")


def queue(cluster: control.Cluster) -> dict[str, str]:
    """Jobs in every queued state rtool reads; returns {name: job id}."""
    ids = {"cap-run": sbatch("cap-run", "--time=10", "-w", "n1")}
    ids["cap-nolimit"] = sbatch("cap-nolimit", "-w", "n1")
    ids["cap-array"] = sbatch("cap-array", "--array=1-3%1", "--time=10", "-w", "n1")
    ids["cap-held"] = sbatch("cap-held", "-H")
    ids["cap-begin"] = sbatch("cap-begin", "--begin=now+3600")
    ids["cap-dep"] = sbatch("cap-dep", f"--dependency=afterok:{ids['cap-run']}")
    cluster.drain_node("n3", "GPU 3 ECC errors")
    ids["cap-drained"] = sbatch("cap-drained", "-w", "n3")
    ids["cap-cancel-pend"] = sbatch("cap-cancel-pend", "-w", "n3")  # cancelled before it ran
    for name in ("cap-run", "cap-nolimit"):
        wait(f"{name} running", lambda n=name: state(ids[n]) == "RUNNING")  # type: ignore[misc]
    wait("the array's first task", lambda: len(job_ids("cap-array")) == 2)
    time.sleep(5)  # the scheduler gives every pending job its reason
    return ids


def capture_queue(out: Path, ids: dict[str, str]) -> None:
    (out / "squeue.txt").write_text(run("squeue", "-h", "-o", SQUEUE_FORMAT))
    rel = {**os.environ, "SLURM_TIME_FORMAT": "relative"}
    (out / "squeue-relative.txt").write_text(run("squeue", "-h", "-o", SQUEUE_FORMAT, env=rel))
    (out / "sinfo.txt").write_text(run("sinfo", "-N", "-h", "-o", SINFO_FORMAT))
    (out / "show-node-n3.txt").write_text(run("scontrol", "show", "node", "n3"))
    for name in ("cap-drained", "cap-array", "cap-run", "cap-nolimit"):
        text = run("scontrol", "show", "job", ids[name])
        (out / f"show-job-{name.removeprefix('cap-')}.txt").write_text(text)
    argv = ["scontrol", "update", f"jobid={ids['cap-array']}", "ExcNodeList=n2"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    (out / "exclude-update.txt").write_text(
        f"exit {res.returncode}\n--- stdout\n{res.stdout}--- stderr\n{res.stderr}"
    )
    after = run("scontrol", "show", "job", ids["cap-array"])
    (out / "show-job-array-after-exclude.txt").write_text(after)


def end_jobs(cluster: control.Cluster, ids: dict[str, str]) -> None:
    """Bring every job to an end in a different way (n2 holds only the node failure)."""
    sbatch("cap-done", "-w", "n1", body="true")
    sbatch("cap-fail", "-w", "n1", body="exit 3")
    sbatch("cap-signal", "-w", "n1", body="kill -9 $$")
    sbatch("cap-timeout", "--time=1", "-w", "n1")
    ids["cap-cancel-run"] = sbatch("cap-cancel-run", "--time=10", "-w", "n1")
    nodefail = sbatch("cap-nodefail", "--requeue", "-w", "n2", "--time=10")
    wait("cap-nodefail running", lambda: state(nodefail) == "RUNNING")
    cluster.fail_node("n2", "rtool capture: power cut")
    cluster.revive_node("n2")
    run("scancel", ids["cap-cancel-pend"])
    run("scontrol", "update", "nodename=n3", "state=resume")
    wait("cap-drained to run", lambda: state(ids["cap-drained"]) == "RUNNING")
    wait("cap-cancel-run to run", lambda: state(ids["cap-cancel-run"]) == "RUNNING")
    names = ["cap-drained", "cap-cancel-run", "cap-held", "cap-run", "cap-nolimit", "cap-array"]
    run("scancel", *(ids[n] for n in [*names, "cap-begin", "cap-dep"]))
    wait("cap-nodefail again", lambda: state(nodefail) == "RUNNING")
    run("scancel", nodefail)
    wait("cap-timeout", lambda: not job_ids("cap-timeout"), timeout=180)


def capture_sacct(out: Path) -> None:
    argv = ["sacct", "-P", "-n", "-X", "-D", f"--format={SACCT_FORMAT}", "-S", "now-1hour"]
    argv.append("--name=" + ",".join(QUEUED + ENDED))

    def settled() -> bool:
        lines = run(*argv).splitlines()
        return bool(lines) and not any("|RUNNING|" in ln or "|PENDING|" in ln for ln in lines)

    wait("sacct to see every job end", settled, timeout=60)
    (out / "sacct.txt").write_text(run(*argv))


def main() -> int:
    release = releases.get()
    os.environ["PATH"] = release.path_env()
    out = HERE / release.name
    out.mkdir(exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="rtool-capture-"))
    cluster = control.up(directory, release=release.name)
    os.environ.update(cluster.env)
    try:
        (out / "VERSION").write_text(run("scontrol", "--version"))
        ids = queue(cluster)
        capture_queue(out, ids)
        end_jobs(cluster, ids)
        capture_sacct(out)
    finally:
        control.down(directory)
        shutil.rmtree(directory, ignore_errors=True)
    print(f"captured Slurm {release.name} into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
