"""ecc: uncorrectable GPU memory (ECC) errors: CUDA's own error, or nvidia-smi's counters."""

from rtool.runs.signatures.base import ROOT, Declared

SIGNATURE = Declared(
    name="ecc",
    label="GPU ECC error",
    pattern=r"\buncorrectable ECC error encountered\b|cudaErrorECCUncorrectable"
    r"|^ {0,40}(?:(?:SRAM|DRAM) )?Uncorrectable(?: Error)? {0,40}: {0,4}[1-9][0-9]{0,9} {0,8}$",
    node_level=True,
    tier=ROOT,
    action="the GPU memory failed: the node is suspect (rtool nodes)",
    why="CUDA on the node whose GPU memory failed reports it",
    examples=(
        "RuntimeError: CUDA error: uncorrectable ECC error encountered",
        "  what():  CUDA error: uncorrectable ECC error encountered",
        "RuntimeError: cuda runtime error (39) : uncorrectable ECC error encountered at "
        "/pytorch/aten/src/THC/THCCachingHostAllocator.cpp:265",
        "            DRAM Uncorrectable            : 2",
    ),
    near_misses=(
        "            DRAM Uncorrectable            : 0",
        "            SRAM Correctable              : 12",
        "# an uncorrectable ECC error makes CUDA abort",
        "ecc_errors = query('ecc.errors.uncorrected.volatile.total')",
        "KeyError: 'ecc'",
        "| GPU  Name                  Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |",
    ),
)
