"""ecc: uncorrectable GPU memory (ECC) errors: CUDA's own error, or nvidia-smi's counters."""

from rtool.runs.signatures.base import Declared

SIGNATURE = Declared(
    name="ecc",
    label="GPU ECC error",
    pattern=r"\buncorrectable ECC error encountered\b"
    r"|^ {0,40}(?:(?:SRAM|DRAM) )?Uncorrectable(?: Error)? {0,40}: {0,4}[1-9][0-9]{0,9} {0,8}$",
    node_level=True,
    examples=(
        "RuntimeError: CUDA error: uncorrectable ECC error encountered",
        "CUDA error: uncorrectable ECC error encountered",
        "            DRAM Uncorrectable            : 2",
        "            SRAM Uncorrectable            : 1",
    ),
    near_misses=(
        "            DRAM Uncorrectable            : 0",
        "            SRAM Correctable              : 12",
        "# an uncorrectable ECC error makes CUDA abort",
        "ecc_errors = query('ecc.errors.uncorrected.volatile.total')",
        "KeyError: 'ecc'",
    ),
)
