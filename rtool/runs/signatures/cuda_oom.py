"""cuda-oom: the CUDA caching allocator (or cuBLAS) could not allocate GPU memory."""

from rtool.runs.signatures.base import ROOT, Declared

SIGNATURE = Declared(
    name="cuda-oom",
    label="CUDA out of memory",
    pattern=r"OutOfMemoryError: CUDA out of memory|CUDA out of memory\. Tried to allocate"
    r"|CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED",
    tier=ROOT,
    action="the training needs more GPU memory than it has: a smaller batch, activation "
    "checkpointing or more sharding",
    why="the training's own allocation; the GPU is fine",
    examples=(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; "
        "79.15 GiB total capacity; 76.10 GiB already allocated)",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
        "RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 3; 39.59 GiB "
        "total capacity)",
        "RuntimeError: CUDA error: out of memory",
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    ),
    near_misses=(
        "# retry the step with a smaller batch on CUDA out of memory",
        "except torch.cuda.OutOfMemoryError:",
        'print("caught CUDA OOM, halving the batch")',
    ),
)
