"""xid: the NVIDIA kernel driver reported an Xid error (a GPU or driver fault) on the node."""

from rtool.runs.signatures.base import Declared

SIGNATURE = Declared(
    name="xid",
    label="GPU XID error",
    pattern=r"\bNVRM: Xid \(PCI:[0-9A-Fa-f:.]{4,20}\): \d{1,3}\b",
    node_level=True,
    examples=(
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
        "[1234567.890123] NVRM: Xid (PCI:0000:b1:00): 48, pid='<unknown>', name=<unknown>, "
        "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer.",
        "kernel: NVRM: Xid (PCI:0000:07:00): 94, pid=2210, name=python3, Contained: SM (0x1). "
        "RST: No, D-RST: No",
        "NVRM: Xid (PCI:0000:86:00.0): 63, pid=81, Row Remapper: New row marked for remapping",
    ),
    near_misses=(
        "KeyError: 'xid'",
        "# look for NVRM: Xid lines in dmesg after a crash",
        'print(f"xid={xid}")',
        'if "NVRM: Xid" in line:',
        "grep -i xid /var/log/kern.log",
        "Xid 79 means the GPU fell off the bus",
    ),
)
