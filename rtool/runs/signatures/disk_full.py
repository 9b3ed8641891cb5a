"""disk-full: a write failed because the filesystem is full (ENOSPC)."""

from rtool.runs.signatures.base import ROOT, Declared

SIGNATURE = Declared(
    name="disk-full",
    label="disk full",
    pattern=r"\[Errno 28\] No space left on device(?:: '(?P<what>[^']{1,300})')?"
    r"|: No space left on device|kind: StorageFull\b",
    tier=ROOT,
    action="free space where it writes ({what}); `rtool watch disk` shows the filesystems",
    what_default="the checkpoint or output filesystem",
    why="a filesystem, not the node's hardware",
    examples=(
        "OSError: [Errno 28] No space left on device",
        "OSError: [Errno 28] No space left on device: '/scratch/run7/ckpt/step_1200.pt'",
        "safetensors_rust.SafetensorError: Error while serializing: IoError(Os { code: 28, kind: "
        'StorageFull, message: "No space left on device" })',
    ),
    near_misses=(
        "# No space left on device? clean the checkpoints",
        "except OSError as e:  # ENOSPC handled below",
        'if "no space" in msg:',
    ),
)
