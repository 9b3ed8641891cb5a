"""The partition reader: GraceTime and PreemptMode as both releases print them."""

from rtool.core.slurm.partition import parse_partitions, partition

TEXT = """PartitionName=low
   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL
   Default=YES QoS=N/A
   GraceTime=20 Hidden=NO
   PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO
   PreemptMode=REQUEUE

PartitionName=high
   Default=NO GraceTime=0 PriorityTier=2 PreemptMode=OFF

PartitionName=long
   Default=NO GraceTime=00:02:00 PriorityTier=1 PreemptMode=CANCEL
"""


class _Fake:
    def scontrol(self, *args: str) -> str:
        assert args == ("show", "partition")
        return TEXT


def test_grace_and_mode_of_each_partition() -> None:
    low, high, long = parse_partitions(TEXT)
    assert (low.name, low.grace, low.requeues, low.default, low.priority_tier) == (
        "low",
        20.0,
        True,
        True,
        1,
    )
    assert (high.grace, high.requeues, high.priority_tier) == (0.0, False, 2)
    assert (long.grace, long.requeues) == (120.0, False)


def test_lookup_by_name_default_and_list() -> None:
    assert partition(_Fake(), "high").name == "high"  # type: ignore[union-attr]
    assert partition(_Fake(), None).name == "low"  # type: ignore[union-attr]
    assert partition(_Fake(), "long,high").name == "long"  # type: ignore[union-attr]
    assert partition(_Fake(), "nope") is None
