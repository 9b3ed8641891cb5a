"""nccl-error: NCCL itself reported an error (a warning line or an NCCL result code)."""

from rtool.runs.signatures.base import Declared

SIGNATURE = Declared(
    name="nccl-error",
    label="NCCL error",
    pattern=r"\[\d{1,5}\] NCCL WARN |NCCL error in: [^ ]{1,300}:\d{1,6}, "
    r"|\bnccl(?:Internal|System|Remote|UnhandledCuda|InvalidUsage|InvalidArgument)Error: "
    r"|NCCL communicator was aborted on rank \d",
    examples=(
        "n1:12345:12400 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<45012> with "
        "error 12, opcode 0, len 0, vendor err 129",
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for "
        "details), NCCL version 2.18.1",
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
        "device error.",
        "ncclRemoteError: A call failed possibly due to a network error or a remote process "
        "exiting prematurely.",
        "RuntimeError: NCCL communicator was aborted on rank 2.",
    ),
    near_misses=(
        "n1:12345:12345 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>",
        "# NCCL WARN lines mean the fabric is flaky",
        "export NCCL_DEBUG=WARN",
        "if 'ncclInternalError' in str(exc):",
    ),
)
