"""nccl-timeout: PyTorch's NCCL watchdog found a collective that ran past its timeout."""

from rtool.runs.signatures.base import Declared

SIGNATURE = Declared(
    name="nccl-timeout",
    label="NCCL timeout (collective watchdog)",
    pattern=r"Watchdog caught collective operation timeout: WorkNCCL\(",
    node_level=True,
    examples=(
        "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600042 milliseconds before timing out.",
        "[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=4123, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800471 "
        "milliseconds before timing out.",
        "torch.distributed.DistBackendError: [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=2, OpType=_ALLGATHER_BASE, NumelIn=8, NumelOut=64, "
        "Timeout(ms)=600000) ran for 600080 milliseconds before timing out.",
    ),
    near_misses=(
        "# an NCCL timeout here means a peer died: raise NCCL_TIMEOUT",
        "[I ProcessGroupNCCL.cpp:686] [Rank 0] ProcessGroupNCCL initialization options: "
        "NCCL_ASYNC_ERROR_HANDLING: 1, NCCL_DESYNC_DEBUG: 0, TIMEOUT(ms): 600000",
        'print("NCCL timed out? retrying")',
        "dist.init_process_group('nccl', timeout=timedelta(minutes=30))",
        "Watchdog caught collective operation timeout",
    ),
)
