"""On the local cluster: `rtool submit --flight-recorder`. The training sees PyTorch's flight
recorder variables (a value the user exported kept), writes its stand-in dumps with the prefix
it was given, and hangs; the attempt's end record, `rtool history` and `rtool watch run` name
the dumps: how many, where, which ranks, and how to read them."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rtool.core.slurm import Slurm
from tests.conftest import CliResult
from tests.helpers import wait_for

WORKER = Path(__file__).with_name("flight_worker.py")
READ = "python -m torch.distributed.flight_recorder.fr_trace"
Cli = Callable[..., CliResult]


@pytest.mark.slurm
@pytest.mark.timeout(150)
def test_a_hang_names_the_flight_recorder_dumps_of_its_launch(
    cli: Cli, slurm: Slurm, job_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = time.monotonic()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TORCH_NCCL_TRACE_BUFFER_SIZE", "500")  # the user's own: kept
    hb = tmp_path / "run" / "heartbeat.json"
    try:
        res = cli(
            *("submit", str(WORKER), "--job-name", job_name, "--python", sys.executable),
            *("--heartbeat", str(hb), "--restarts-in-place", "0", "--hang-after", "3s"),
            *("--time", "0:05:00", "--no-preflight", "--flight-recorder", "--parsable"),
        )
        assert res.code == 0, res.err
        job = res.out.strip().split(";")[0]

        def history() -> dict[str, object] | None:
            res = cli("history", job_name, "--heartbeat", str(hb), "--json")
            attempts = json.loads(res.out)["ledger"]["attempts"] if res.code == 0 else []
            return attempts[0] if attempts and attempts[0].get("stacks") else None

        first = wait_for(history, 80, 1, "the end record naming the dumps")
    finally:
        slurm.scancel(name=job_name)
    log = (tmp_path / f"{job_name}-{job}.out").read_text()
    seen = dict(re.findall(r"^flight-worker (\w+)=(.*)$", log, re.M))
    assert seen["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "500", log
    assert seen["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1", log
    prefix = Path(seen["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"])
    folder = prefix.parent
    assert prefix.name == "nccl_trace_rank_" and folder.name == "abort.nccl-0", log
    assert folder.parent.parent == tmp_path and (folder.stat().st_mode & 0o777) == 0o700
    said = f"NCCL flight recorder: 4 dumps in {folder} (ranks 0-3)"
    stacks = str(first["stacks"])  # type: ignore[index]
    assert re.fullmatch(
        rf"rank 0 on n\d+ in \w+ at flight_worker\.py:\d+; {re.escape(said)}.*", stacks
    )
    res = cli("watch", "run", job_name, "--heartbeat", str(hb), "--no-notify", "--json")
    summary = json.loads(res.out)["results"][0]["summary"]
    assert "hung: rank 0 on n" in summary and said in summary, summary
    assert stacks.endswith((f"; read them: {READ} {folder}", f"; read them: {READ} <that folder>"))
    print(f"\n{summary}\n{time.monotonic() - started:.0f}s")
