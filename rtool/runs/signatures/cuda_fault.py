"""cuda-fault: a CUDA kernel faulted (illegal address, launch failure, unknown error)."""

from rtool.runs.signatures.base import ROOT, Declared

SIGNATURE = Declared(
    name="cuda-fault",
    label="CUDA fault",
    pattern=r"an illegal memory access was encountered|unspecified launch failure"
    r"|misaligned address|an illegal instruction was encountered"
    r"|CUDA error: unknown error|CUDA_ERROR_LAUNCH_FAILED|CUDA_ERROR_ILLEGAL_ADDRESS",
    tier=ROOT,
    action="code or GPU: check the node if it repeats on the same node",
    why="a bad kernel and a failing GPU print the same: only a repeat on one node blames it",
    examples=(
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "RuntimeError: merge_sort: failed to synchronize: cudaErrorIllegalAddress: an illegal "
        "memory access was encountered",
        "  what():  CUDA error: unspecified launch failure (insert_events at "
        "/pytorch/c10/cuda/CUDACachingAllocator.cpp:764)",
        "[default3]:  what():  CUDA error: unknown error",
    ),
    near_misses=(
        "# CUDA_LAUNCH_BLOCKING=1 helps to find an illegal memory access",
        'raise RuntimeError("unknown error")',
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
    ),
)
