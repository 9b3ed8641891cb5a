"""xid: the NVIDIA kernel driver reported a hardware Xid (the GPU, its memory, NVLink, the bus)."""

from rtool.runs.signatures.base import ROOT, Declared

#: Xids NVIDIA's catalogue lists as application errors (or the cleanup after one): xid-app.
APP_XIDS = r"(?:13|31|43|45|109)"

SIGNATURE = Declared(
    name="xid",
    label="GPU XID error",
    pattern=rf"\bNVRM: Xid \(PCI:[0-9A-Fa-f:.]{{4,20}}\): (?!{APP_XIDS}\b)\d{{1,3}}\b",
    node_level=True,
    tier=ROOT,
    action="the GPU reported a hardware fault: the node is suspect (rtool nodes)",
    why="the kernel of the node whose GPU failed prints it",
    examples=(
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
        "[1234567.890123] NVRM: Xid (PCI:0000:b1:00): 48, pid='<unknown>', name=<unknown>, "
        "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer.",
        "NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error",
        "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 "
        "0x00000000 0x00000000 0x00000000 0x00000000)",
    ),
    near_misses=(
        "KeyError: 'xid'",
        "# look for NVRM: Xid lines in dmesg after a crash",
        'print(f"xid={xid}")',
        'if "NVRM: Xid" in line:',
        "grep -i xid /var/log/kern.log",
        "Xid 79 means the GPU fell off the bus",
        "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp "
        "Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter",
    ),
)
