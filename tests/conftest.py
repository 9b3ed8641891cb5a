"""Shared fixtures: the real local Slurm (session), the CLI in-process, an isolated state dir.

Tests that need Slurm request `slurm_cluster` (or `slurm`): when the cluster cannot start they
FAIL with the reason; they are never skipped. `tmpfs` mounts real size- and inode-limited tmpfs.

The Slurm release is chosen once for the session by RTOOL_TEST_SLURM (22.05, Debian's, by
default; 24.11 is built once into /opt/rtool-slurm when missing): its bin/sbin go first on PATH
for the whole session, so every client the tests and rtool run comes from the release whose
daemons run the clusters (checked at the start, the session stops otherwise).
"""

from __future__ import annotations

import logging
import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devtools.localslurm import control, releases, users
from rtool.core.slurm import Slurm
from tests.helpers import private_cluster


def pytest_configure(config: pytest.Config) -> None:
    """The session's Slurm release: built when missing, its clients first on PATH."""
    try:
        release = releases.get()
        if not release.built:
            from devtools.localslurm import slurmbuild

            slurmbuild.build(release)
        release.check_trusted()
        os.environ["PATH"] = release.path_env()
        releases.check_clients(release)
    except (releases.ReleaseError, RuntimeError, OSError) as exc:
        raise pytest.UsageError(f"Slurm for the tests ({releases.ENV}): {exc}") from None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        help="the quick tier (scripts/test --quick): no test that needs the local Slurm "
        "(the slurm marker or fixture) or is marked slow",
    )
    parser.addoption(
        "--beyond-quick",
        action="store_true",
        help="only what the quick tier leaves out (scripts/test runs it on the second release: "
        "the pure tests do not depend on the Slurm release and ran on the first)",
    )


#: Left out of the quick tier though they need no session cluster: their own clusters, real
#: frameworks under torchrun, a wheel install, timing-bound proofs (each 5-50 s under load;
#: measured with `--durations` on 2026-11-28).
SLOW = (
    "tests/nodes/test_scale.py",
    "tests/test_tiers.py",
    "tests/install/",
    "tests/shim/test_frameworks.py",
    "tests/shim/test_distributed.py",
    "tests/watchdogs/test_checkpoint_frameworks.py",
    "tests/hardening/test_patterns.py",
    "tests/hardening/test_records.py::test_a_symlink_swapped_in_never_gets_a_record",
    "tests/hardening/test_bounds.py::test_the_ledger_keeps_the_last_attempts_in_full_plus_totals",
    "tests/hardening/test_properties_surface.py::test_every_option_refuses_an_empty_value",
    "tests/shim/test_deadline.py::test_a_rank_stuck_in_a_collective_is_ended_through_the_wakeup_fd",
    "tests/shim/test_deadline.py::test_a_loop_stuck_after_sigterm_is_ended_and_says_so",
    "tests/timeline/test_goodput_run.py",
    "tests/watchdogs/test_checkpoint.py::test_a_writer_that_stops_saving_is_overdue_by_its_pace",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--quick`: deselect the tests that need a Slurm cluster, are marked slow or are SLOW;
    `--beyond-quick`: deselect the others."""
    quick, beyond = config.getoption("--quick"), config.getoption("--beyond-quick")
    if quick and beyond:
        raise pytest.UsageError("--quick and --beyond-quick: choose one")
    if not (quick or beyond):
        return
    keep, drop = [], []
    for item in items:
        (drop if _beyond_quick(item) == bool(quick) else keep).append(item)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep


def _beyond_quick(item: pytest.Item) -> bool:
    """The test needs a Slurm cluster, is marked slow or is listed in SLOW."""
    needs = set(getattr(item, "fixturenames", ())) & {"slurm_cluster", "slurm"}
    marked = item.get_closest_marker("slurm") or item.get_closest_marker("slow")
    return bool(marked or needs or item.nodeid.startswith(SLOW))


def pytest_report_header(config: pytest.Config) -> str:
    release = releases.get()
    return f"slurm: {release.name} ({release.prefix or 'Debian packages'}; {releases.ENV})"


#: RTOOL_* variables of the test machine, not of rtool: the cluster folder, the Slurm release.
KEPT = ("RTOOL_SLURM_", releases.ENV)


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the developer's config or state."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.delenv("RTOOL_CONFIG", raising=False)
    for var in list(os.environ):
        if var.startswith("RTOOL_") and not var.startswith(KEPT):
            monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """The CLI points the root logger at the (captured, later closed) stderr: undo it."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """tmpfs("name", size="10M", inodes=200) mounts a real tmpfs; all unmounted after."""
    mounted: list[Path] = []

    def mount(name: str, size: str = "10M", inodes: int = 200) -> Path:
        point = tmp_path / name
        point.mkdir()
        opts = f"size={size},nr_inodes={inodes}"
        subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(point)], check=True)
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[control.Cluster]:
    """A real 3-node Slurm (n1..n3) with accounting for the whole session, in its own folder
    and ports (slurmdbd and MariaDB included: sacct answers)."""
    with private_cluster("rtool-slurm-", "local Slurm", nodes=3, accounting=True) as cluster:
        version = releases.version(cluster.env) or "no answer"
        if not version.startswith(f"{cluster.release.name}."):
            pytest.fail(f"scontrol --version: {version}, not Slurm {cluster.release.name}")
        old = os.environ.get("SLURM_CONF")
        os.environ["SLURM_CONF"] = str(cluster.conf)
        yield cluster
    if old is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = old


@pytest.fixture(scope="session")
def preempt_cluster() -> Iterator[control.Cluster]:
    """A second 3-node cluster with the preemptible partitions `low`, `low0` and `high`
    (docs/local-slurm.md), started when a preemption test first asks for it. Apart from the
    session's: with preemption on, Slurm lets no two jobs share a core."""
    from devtools.localslurm.slurmconf import PREEMPTION

    what = "local Slurm (preemptible)"
    shape = {"nodes": 3, "accounting": True, "extra": PREEMPTION}
    with private_cluster("rtool-slurm-preempt-", what, **shape) as cluster:
        yield cluster


@pytest.fixture
def preemptible(
    preempt_cluster: control.Cluster, monkeypatch: pytest.MonkeyPatch
) -> control.Cluster:
    """The preemptible cluster, for this test's Slurm commands (SLURM_CONF)."""
    monkeypatch.setenv("SLURM_CONF", str(preempt_cluster.conf))
    return preempt_cluster


@pytest.fixture(scope="session")
def peer() -> users.LocalUser:
    """A second Unix user (`rtool-peer`, in group `rtool-peers`), created when missing: the
    other user of a shared cluster. Fails (never skips) when it cannot be made."""
    try:
        return users.ensure_user()
    except users.LocalUserError as exc:
        pytest.fail(f"the second test user could not be made: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def peer_cluster(slurm_cluster: control.Cluster, peer: users.LocalUser) -> users.LocalUser:
    """The second user, able to use the session's cluster (its folder opened for traversal so
    that their commands read slurm.conf; slurmdbd.conf and the database stay 0600/0700)."""
    mode = slurm_cluster.dir.stat().st_mode & 0o7777
    os.chmod(slurm_cluster.dir, mode | 0o011)
    return peer


@pytest.fixture
def slurm(slurm_cluster: control.Cluster) -> Iterator[Slurm]:
    """rtool's Slurm layer on the local cluster; jobs named by `job_name` are cancelled after.
    Every node takes jobs when the test starts: one an earlier test failed, drained or left
    unanswered (a controller restart) is brought back first, so no test sees another's fault
    (a pending job's reason `ReqNodeNotAvail` instead of its own)."""
    states = slurm_cluster.node_states()
    for node in slurm_cluster.nodes:
        if states.get(node) not in control.READY:
            slurm_cluster.revive_node(node, timeout=90)
    s = Slurm(timeout=30)
    yield s


@pytest.fixture
def job_name(slurm: Slurm) -> Iterator[str]:
    """A unique job name for this test; its jobs are cancelled afterwards."""
    name = f"rt-{uuid.uuid4().hex[:8]}"
    yield name
    try:
        s = Slurm(timeout=30)
        s.scancel(name=name)
    except Exception:
        pass


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run `rtool ARGS...` in-process: cli("config", "check") -> CliResult(code, out, err)."""
    from rtool.app.cli import main

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run
