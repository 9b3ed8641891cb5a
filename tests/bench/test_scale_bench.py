"""The pure parts of bench/scale.py (bench/_scale_lib.py): its Slurm call log, the attempt
records it writes, and the arithmetic of its goals. No Slurm, no clock."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

from bench import _scale_lib as lib
from rtool.runs.attempt_records import parse_records
from rtool.runs.slurm_facts import from_records_and_queue


def test_the_path_wrapper_logs_each_call_and_runs_the_real_program(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    real = tmp_path / "bin dir" / "squeue"  # a space: the wrapper quotes what it embeds
    real.parent.mkdir()
    real.write_text('#!/bin/sh\nprintf "real:%s\\n" "$@"\n')
    real.chmod(0o755)
    wrapper = tmp_path / "squeue"
    wrapper.write_text(lib.wrapper_script(str(real), log))
    wrapper.chmod(0o755)
    args = ["-h", "--name=a,b", "--format=%i %j", "it's"]
    out = subprocess.run([str(wrapper), *args], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [f"real:{a}" for a in args]
    subprocess.run([str(wrapper)], check=True, capture_output=True)
    assert lib.parse_call_log(log.read_text()) == [["squeue", *args], ["squeue"]]

    # calls run side by side (squeue beside sacct in a sweep) write whole lines
    log.write_text("")
    procs = [
        subprocess.Popen([str(wrapper), f"--n={i}", *["x"] * 100], stdout=subprocess.DEVNULL)
        for i in range(30)
    ]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    logged = lib.parse_call_log(log.read_text())
    assert sorted(c[1] for c in logged) == sorted(f"--n={i}" for i in range(30))
    assert all(c == ["squeue", c[1], *["x"] * 100] for c in logged)


def test_calls_counted_by_command_and_reads_told_from_writes() -> None:
    calls = [
        ["squeue", "-h"],
        ["sacct", "-X"],
        ["sinfo", "-N"],
        ["scontrol", "update", "JobId=5", "ExcNodeList=n[5,9]"],
        ["scontrol", "show", "job", "5"],
    ]
    counted = lib.count_calls(calls)
    assert counted == Counter(
        {"squeue": 1, "sacct": 1, "sinfo": 1, "scontrol update": 1, "scontrol show": 1}
    )
    assert not lib.reads_only(counted)
    assert lib.reads_only(lib.count_calls(calls[:3]))
    assert lib.reads_only(Counter({"squeue": 1}))
    assert not lib.reads_only(Counter({"squeue": 2, "sacct": 1}))  # two squeue: not one sweep
    assert not lib.reads_only(Counter({"sacct": 1}))  # no squeue at all


def test_records_make_a_ledger_of_exactly_n_attempts_in_order() -> None:
    recs = parse_records(lib.attempt_records(200, job_id=77, nodes=16)).records
    assert len(recs) == 400
    attempts = from_records_and_queue("r", [], recs, [], now=2e9)
    assert len(attempts) == 200
    assert sorted(a.restart for a in attempts) == list(range(200))
    assert all(a.job_id == "77" and a.is_over for a in attempts)
    assert {a.nodes for a in attempts} == {tuple(f"n{i}" for i in range(1, 17))}
    # small enough that `rtool history` reads every attempt (it reads the last 16 MiB)
    assert len(lib.attempt_records(1000)) < 16 * 1024 * 1024


def test_growth_against_the_work() -> None:
    flat = lib.growth([1000, 5000, 10000], [0.10, 0.11, 0.12])
    assert (flat.work, round(flat.cost, 2), flat.ok) == (10, 1.2, True)
    assert lib.growth([50, 500], [0.01, 0.1]).ok  # linear is allowed
    assert not lib.growth([50, 500], [0.01, 0.2]).ok  # twice the work's growth is not
    # below the floor, noise in near-zero costs counts as the floor
    assert lib.growth([50, 500], [0.0, 0.004], floor=0.005).cost == 1.0
    assert lib.goal_line("x", True, "d") == "PASS  x: d"
    assert lib.goal_line("x", False, "d").startswith("FAIL")


def test_the_sizes_option_and_the_attempts_history_lists() -> None:
    import argparse

    import pytest

    assert lib.parse_sizes("256,64,64") == [64, 256]
    for bad in ("", "a", "0", "64,-1"):
        with pytest.raises(argparse.ArgumentTypeError, match="not a list of sizes"):
            lib.parse_sizes(bad)
    table = (
        "#    job  nodes\n1    88_1  -\n2    88_2  -\n"
        "  ↑ the oldest 2 attempt(s), compacted\n3    88_3  n1\n     ↳ 10:00:00 restarted\n\n"
        "run r: not finished; 3 attempt(s)\n"
    )
    assert lib.listed_attempts(table) == [1, 2, 3]
