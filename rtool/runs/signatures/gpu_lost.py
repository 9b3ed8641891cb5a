"""gpu-lost: a GPU fell off the bus or is lost, said without an Xid line (driver or nvidia-smi)."""

from rtool.runs.signatures.base import ROOT, Declared

SIGNATURE = Declared(
    name="gpu-lost",
    label="GPU lost (fell off the bus)",
    pattern=r"NVRM: .{0,120}fallen off the bus"
    r"|Unable to determine the device handle for GPU ?[0-9A-Fa-f:.]{4,20}: "
    r"(?:Unknown Error|GPU is lost)",
    node_level=True,
    tier=ROOT,
    action="a GPU of the node is gone: the node is suspect (rtool nodes)",
    why="the driver or nvidia-smi of the node whose GPU is gone prints it",
    examples=(
        "               NVRM: fallen off the bus and is not responding to commands.",
        "Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error",
        "        Unable to determine the device handle for GPU 0000:03:00.0: GPU is lost.  Reboot",
    ),
    near_misses=(
        "# if the GPU has fallen off the bus, reboot",
        'print("GPU fell off the bus?")',
        "Unable to determine the device handle for GPU",
    ),
)
