"""On the local cluster: 4 ranks on 2 nodes under torchrun (gloo, CPU); rank 3 hangs in its data
loader and the others in the all_reduce waiting for it, with no in-place restart: the array's
next task takes over (the hang requeued, not restarted in place). The attempt's end record
carries where the ranks were (their stack files, grouped), and `rtool watch run` and
`rtool history` say it while the next attempt runs."""

from __future__ import annotations

import json
import re
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rtool.core.slurm import Slurm
from tests.conftest import CliResult
from tests.helpers import wait_for

WORKER = Path(__file__).with_name("hang_worker.py")
Cli = Callable[..., CliResult]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slurm
@pytest.mark.timeout(420)
def test_a_requeued_hang_is_named_by_watch_run_with_the_odd_rank(
    cli: Cli, slurm: Slurm, job_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    hb = tmp_path / "run" / "heartbeat.json"
    for k, v in {
        "ODD_RANK": "3",
        "HANG_ONCE": str(tmp_path / "hung"),
        "OMP_NUM_THREADS": "1",
    }.items():
        monkeypatch.setenv(k, v)
    torchrun = Path(sys.executable).with_name("torchrun")
    launcher = (
        f"{torchrun} --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d "
        f"--rdzv-endpoint 127.0.0.1:{_free_port()} --rdzv-id {job_name}"
    )
    try:
        res = cli(
            *("submit", str(WORKER), "--job-name", job_name, "--nodes", "2"),
            *("--launcher", launcher, "--heartbeat", str(hb), "--array", "0-1%1"),
            *("--restarts-in-place", "0", "--hang-after", "3s", "--time", "0:10:00"),
        )
        assert res.code == 0, res.err

        def said() -> tuple[int, str] | None:
            res = cli("watch", "run", job_name, "--heartbeat", str(hb), "--no-notify", "--json")
            got = json.loads(res.out)["results"][0] if res.out.strip() else None
            return (res.code, got["summary"]) if got and ") hung: " in got["summary"] else None

        code, summary = wait_for(said, 300, 2, "watch run naming the hung ranks")  # type: ignore[misc]
        assert code == 1, summary  # WARNING: the next attempt runs
        pattern = (
            rf"{job_name} attempt 1 \(job \d+_0\) hung: 3 ranks in "
            r"all_reduce at hang_worker\.py:\d+; rank 3 on (n\d) in next_batch at "
            r"hang_worker\.py:23"
        )
        m = re.fullmatch(pattern, summary)
        assert m, summary
        print(f"\n{summary}")
        res = cli("history", job_name, "--heartbeat", str(hb), "--json")
        first = json.loads(res.out)["ledger"]["attempts"][0]
        assert first["stacks"].endswith(
            f"rank 3 on {m.group(1)} in next_batch at hang_worker.py:23"
        )
        assert m.group(1) in first["nodes"], first
    finally:
        slurm.scancel(name=job_name)
