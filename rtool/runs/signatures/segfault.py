"""segfault: the process died on SIGSEGV (as the shell, srun, Python or torchrun says it)."""

from rtool.runs.signatures.base import SECONDARY, Declared

SIGNATURE = Declared(
    name="segfault",
    label="segmentation fault",
    pattern=r"Fatal Python error: Segmentation fault|task \d{1,6}: Segmentation fault"
    r"|\d Segmentation fault|^Segmentation fault(?: \(core dumped\))?$"
    r"|Signal 11 \(SIGSEGV\) received by PID \d|\*\*\* SIGSEGV received at time="
    r"|\(exitcode: -11\)|exitcode {0,4}: -11 \(pid|<Signals\.SIGSEGV: 11>"
    r"|killed by signal: Segmentation fault|received signal SIGSEGV, Segmentation fault",
    tier=SECONDARY,
    action="a native crash (an extension, a driver or the data loader): rerun with "
    "PYTHONFAULTHANDLER=1 to see where",
    why="a crash of the process; the node is blamed only by a node-level line",
    examples=(
        "Fatal Python error: Segmentation fault",
        "srun: error: n2: task 0: Segmentation fault (core dumped)",
        "Segmentation fault (core dumped)",
        "  exitcode  : -11 (pid: 3304209)",
        "E1119 08:26:02.715000 28705 site-packages/torch/distributed/elastic/multiprocessing/"
        "api.py:882] failed (exitcode: -11) local_rank: 0 (pid: 28773) of binary: "
        "/app/anaconda3/envs/py312/bin/python3.12",
    ),
    near_misses=(
        "# work around a segfault in the data loader",
        'raise RuntimeError("segfault in collate")',
        'print("Segmentation fault test skipped")',
        "faulthandler.enable()  # print a traceback on SIGSEGV",
    ),
)
