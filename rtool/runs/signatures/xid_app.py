"""xid-app: an Xid NVIDIA's catalogue lists as an application error (13, 31, 43, 45, 109)."""

from rtool.runs.signatures.base import ROOT, Declared
from rtool.runs.signatures.xid import APP_XIDS

SIGNATURE = Declared(
    name="xid-app",
    label="GPU application error (XID)",
    pattern=rf"\bNVRM: Xid \(PCI:[0-9A-Fa-f:.]{{4,20}}\): {APP_XIDS}\b",
    tier=ROOT,
    action="code or GPU: a kernel faulted (bad address, illegal instruction, hang); check the "
    "node if it repeats on the same node",
    why="NVIDIA lists Xid 13, 31, 43, 45 and 109 as application errors (45: cleanup after one)",
    examples=(
        "[ 3957.279047] NVRM: Xid (PCI:0000:05:00): 31, pid='<unknown>', name=<unknown>, Ch "
        "0000000a, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_GCC faulted @ "
        "0x0_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
        "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused "
        "by previous Xid 149",
    ),
    near_misses=(
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
        "# Xid 13 is an application error",
        "NVRM: Xid (PCI:0000:07:00): 130, pid=1, name=x",
    ),
)
