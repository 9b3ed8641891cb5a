"""The next launch's nodes with spare nodes (rtool/nodes/preflight/spares.py): pure choices."""

from __future__ import annotations

from rtool.nodes.preflight.spares import MARK, Spares, launch_line


def test_from_env_only_with_spares() -> None:
    env = {"RTOOL_SPARE_NODES": "1", "RTOOL_LAUNCH_SIZE": "2", "RTOOL_LAUNCH_NODES": "n2,n3"}
    assert Spares.from_env(env) == Spares(2, 1, ("n2", "n3"))
    assert Spares.from_env({**env, "RTOOL_SPARE_NODES": "0"}) is None
    assert Spares.from_env({"RTOOL_LAUNCH_SIZE": "2"}) is None
    odd = Spares.from_env({**env, "RTOOL_LAUNCH_NODES": "n2,$(id),n3"})
    assert odd is not None and odd.launch == ("n2", "n3")  # only node names are taken


def test_a_failed_node_is_replaced_by_a_spare_the_others_kept() -> None:
    s = Spares(2, 1, ("n2", "n3"))
    assert s.pick(["n1", "n2", "n3"], {"n3"}) == ["n1", "n2"]  # allocation order: rank 0 first
    assert s.pick(["n1", "n2"], {"n3"}) == ["n1", "n2"]  # Slurm dropped n3 from the job already
    assert s.pick(["n1", "n2", "n3"], set()) == ["n2", "n3"]  # nothing bad: the same nodes
    big = Spares(2, 2, ("n3", "n4"))
    assert big.pick(["n1", "n2", "n3", "n4"], {"n4"}) == ["n1", "n3"]  # n3 kept, first spare


def test_no_spare_left_gives_none() -> None:
    s = Spares(2, 1, ("n1", "n2"))
    assert s.pick(["n1", "n2", "n3"], {"n2", "n3"}) is None  # requeued, as without spares
    assert s.pick(["n1"], set()) is None
    assert launch_line(["n1", "n2"]) == f"{MARK} n1,n2" == "RTOOL-LAUNCH-NODES n1,n2"
