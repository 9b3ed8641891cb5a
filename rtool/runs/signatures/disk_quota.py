"""disk-quota: a write failed because the user's or project's quota is used up (EDQUOT)."""

from rtool.runs.signatures.base import ROOT, Declared

SIGNATURE = Declared(
    name="disk-quota",
    label="disk quota exceeded",
    pattern=r"\[Errno 122\] Disk quota exceeded(?:: '(?P<what>[^']{1,300})')?"
    r"|: Disk quota exceeded\b",
    tier=ROOT,
    action="the quota is used up where it writes ({what}): check it with your site's quota "
    "command (`lfs quota -u $USER <fs>`, `quota -s`; `rtool watch checkpoint` with quota_cmd "
    "warns before it happens)",
    what_default="the checkpoint or output filesystem",
    why="a quota, not the node's hardware",
    examples=(
        "OSError: [Errno 122] Disk quota exceeded",
        "OSError: [Errno 122] Disk quota exceeded: 'out/intermediate.ntw'",
    ),
    near_misses=(
        "# Disk quota exceeded errors mean you must clean up",
        'print("quota exceeded?")',
    ),
)
