"""segfault: the process died on SIGSEGV (as the shell, srun, Python or torchrun says it)."""

from rtool.runs.signatures.base import Declared

SIGNATURE = Declared(
    name="segfault",
    label="segmentation fault",
    pattern=r"Fatal Python error: Segmentation fault|task \d{1,6}: Segmentation fault"
    r"|\d Segmentation fault|^Segmentation fault(?: \(core dumped\))?$"
    r"|Signal 11 \(SIGSEGV\) received by PID \d|\*\*\* SIGSEGV received at time=",
    examples=(
        "Fatal Python error: Segmentation fault",
        "srun: error: n2: task 0: Segmentation fault (core dumped)",
        "/var/spool/slurmd/job00123/slurm_script: line 12:  4242 Segmentation fault      "
        "(core dumped) python train.py",
        "Segmentation fault (core dumped)",
        "[2026-11-23 14:00:00,000] torch.distributed.elastic.multiprocessing.api: [ERROR] "
        "failed (exitcode: -11) local_rank: 0 (pid: 1234) of binary: python; Signal 11 (SIGSEGV) "
        "received by PID 1234",
    ),
    near_misses=(
        "# work around a segfault in the data loader",
        'raise RuntimeError("segfault in collate")',
        'print("Segmentation fault test skipped")',
        "faulthandler.enable()  # print a traceback on SIGSEGV",
    ),
)
