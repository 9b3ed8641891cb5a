"""Quota parsers on captured `lfs quota` and `mmlsquota -Y` output."""

from __future__ import annotations

import pytest

from rtool.watchdogs.quota import QuotaParseError, parse_quota

LFS_OVER = """\
Disk quotas for usr alice (uid 1000):
     Filesystem  kbytes   quota   limit   grace   files   quota   limit   grace
        /lustre 10485760* 8388608 10485760 6d23h  120000       0  200000       -
"""

LFS_LONG_NAME = """\
Disk quotas for prj 4242 (pid 4242):
     Filesystem  kbytes   quota   limit   grace   files   quota   limit   grace
/lustre/fsx/projects/some-very-long-name
                [52428]       0  104857       -    [12]       0       0       -
"""

MMLSQUOTA = """\
mmlsquota::HEADER:version:reserved:reserved:filesystemName:quotaType:id:name:blockUsage:blockQuota:blockLimit:blockInDoubt:blockGrace:filesUsage:filesQuota:filesLimit:filesInDoubt:filesGrace:remarks:quota:defQuota:fid:filesetname:
mmlsquota::0:1:::gpfs1:USR:1000:alice:900000:0:1000000:60000:none:5000:0:10000:10:none:i:on:off:::
"""


def test_lfs_over_limit_in_kib():
    q = parse_quota("lfs", LFS_OVER)
    assert q.used == 10485760 * 1024 and q.limit == 10485760 * 1024
    assert q.files == 120000 and q.files_limit == 200000
    assert q.over and not q.inaccurate


def test_lfs_long_filesystem_name_and_inaccurate_values():
    q = parse_quota("lfs", LFS_LONG_NAME)
    assert q.used == 52428 * 1024 and q.limit == 104857 * 1024
    assert q.files == 12 and q.files_limit is None
    assert q.inaccurate and not q.over


def test_mmlsquota_in_doubt_counts_against_headroom():
    q = parse_quota("mmlsquota", MMLSQUOTA)
    assert q.used == (900000 + 60000) * 1024
    assert q.limit == 1000000 * 1024
    assert q.files == 5010 and q.files_limit == 10000


def test_simple_format_with_units():
    q = parse_quota("simple", "used=1.5TiB limit=2TiB\nfiles=10 files_limit=0\n")
    assert q.used == int(1.5 * 1024**4) and q.limit == 2 * 1024**4
    assert q.files == 10 and q.files_limit is None


@pytest.mark.parametrize(
    ("fmt", "text", "msg"),
    [
        ("lfs", "lfs: error: no such filesystem\n", "no 'Filesystem kbytes' header"),
        ("mmlsquota", "nothing here", "no HEADER row"),
        ("simple", "limit=5", "no used="),
        ("xfs", "", "unknown quota format"),
    ],
)
def test_unreadable_output_is_a_clear_error(fmt, text, msg):
    with pytest.raises(QuotaParseError, match=msg):
        parse_quota(fmt, text)
