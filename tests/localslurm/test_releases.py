"""Choosing a Slurm release and building one from source (devtools/localslurm/releases.py,
slurmbuild.py): the choice, PATH, the checksum, and that a half-finished or untrusted build is
never used. The builds here are of a tiny source tree whose `configure` writes a Makefile (the
real 24.11 build takes minutes: scripts/build-slurm, run by scripts/setup)."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from devtools.localslurm import releases, slurmbuild
from devtools.localslurm.releases import MARKER, Release, ReleaseError, Source

ROOT = Path(__file__).resolve().parents[2]

CONFIGURE = r"""#!/bin/sh
[ -n "$FAIL_CONFIGURE" ] && { echo "configure: error: no munge" >&2; exit 1; }
for a in "$@"; do case $a in --prefix=*) p=${a#--prefix=} ;; esac; done
{
  printf 'all:\n\t@true\ninstall:\n'
  printf '\tmkdir -p $(DESTDIR)%s/bin $(DESTDIR)%s/sbin\n' "$p" "$p"
  printf '\tcp slurmctld.in $(DESTDIR)%s/sbin/slurmctld\n' "$p"
} > Makefile
"""
SLURMCTLD = "#!/bin/sh\necho slurm 9.9.1\n"


def _tarball(folder: Path) -> tuple[Path, str]:
    path = folder / "fake-9.9.1.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, body in (("configure", CONFIGURE), ("slurmctld.in", SLURMCTLD)):
            data = body.encode()
            info = tarfile.TarInfo(f"fake-9.9.1/{name}")
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Release, Path]:
    """A release built from the tiny tarball into tmp_path/root (RTOOL_SLURM_SOURCE names it)."""
    tarball, digest = _tarball(tmp_path)
    monkeypatch.setenv(releases.PREFIX_ROOT_ENV, str(tmp_path / "root"))
    monkeypatch.setenv(slurmbuild.SOURCE_ENV, str(tarball))
    monkeypatch.setattr(slurmbuild, "BUILD_DEPS", [])  # nothing to apt-get for it
    return Release("9.9", Source("9.9.1", tarball.name, digest)), tarball


def test_the_release_is_chosen_by_name_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(releases.ENV, raising=False)
    assert releases.get().name == "22.05" and releases.get("24.11.5").name == "24.11"
    monkeypatch.setenv(releases.ENV, "24.11")
    assert releases.get().name == "24.11"
    with pytest.raises(
        ReleaseError, match=r"unknown Slurm release '23.02' \(known: 22.05, 24.11\)"
    ):
        releases.get("23.02")
    built = releases.get("24.11")
    assert built.prefix is not None and built.prefix.name == "24.11.5-e1a5547e"


def test_path_puts_the_release_first_and_takes_the_other_one_out() -> None:
    new, old = releases.get("24.11"), releases.get("22.05")
    assert new.prefix is not None
    mine = f"{new.prefix}/bin:{new.prefix}/sbin"
    assert new.path_env("/venv/bin:/usr/bin:/usr/sbin") == f"{mine}:/venv/bin:/usr/bin:/usr/sbin"
    assert new.path_env(f"/venv/bin:{mine}:/usr/bin") == f"{mine}:/venv/bin:/usr/bin"
    assert old.path_env(f"{mine}:/venv/bin:/usr/bin") == "/venv/bin:/usr/bin:/usr/sbin"


def test_a_build_is_installed_whole_with_its_marker_and_reused(fake: tuple[Release, Path]) -> None:
    release, _ = fake
    assert not release.built
    prefix = slurmbuild.build(release, jobs=1)
    assert prefix == release.prefix and release.built and (prefix / MARKER).is_file()
    out = subprocess.run([release.program("slurmctld")], capture_output=True, text=True)
    assert out.stdout == "slurm 9.9.1\n"
    stamp = (prefix / MARKER).stat().st_mtime_ns
    assert slurmbuild.build(release) == prefix  # cached: not built again
    assert (prefix / MARKER).stat().st_mtime_ns == stamp
    assert [p.name for p in prefix.parent.iterdir()] == [".lock", prefix.name] or sorted(
        p.name for p in prefix.parent.iterdir()
    ) == sorted([".lock", prefix.name])


def test_a_failed_build_leaves_nothing_that_looks_built(
    fake: tuple[Release, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    release, _ = fake
    assert release.prefix is not None
    monkeypatch.setenv("FAIL_CONFIGURE", "1")
    with pytest.raises(slurmbuild.BuildError, match="configure: error: no munge"):
        slurmbuild.build(release, jobs=1)
    assert not release.prefix.exists() and not release.built
    assert not list(release.prefix.parent.glob(".build-*"))  # the temp folder is gone too


def test_a_prefix_without_its_marker_is_built_again(fake: tuple[Release, Path]) -> None:
    """A build killed half-way (or a folder put there by hand) is never taken for a cache."""
    release, _ = fake
    assert release.prefix is not None
    (release.prefix / "sbin").mkdir(parents=True)
    (release.prefix / "sbin" / "slurmctld").write_text("#!/bin/sh\necho half\n")
    (release.prefix.parent / ".build-9.9.1-dead").mkdir()  # a dead build's temp folder
    assert not release.built
    slurmbuild.build(release, jobs=1)
    assert release.built and "9.9.1" in (release.prefix / "sbin" / "slurmctld").read_text()
    assert not list(release.prefix.parent.glob(".build-*"))


def test_a_tarball_with_another_checksum_is_refused(
    fake: tuple[Release, Path], tmp_path: Path
) -> None:
    release, tarball = fake
    assert release.source is not None
    tampered = tmp_path / "tampered.tar.gz"
    tampered.write_bytes(tarball.read_bytes() + b"\0")
    tried: list[str] = []
    assert slurmbuild._verified(tampered, release.source, tried) is None
    assert tried == [f"{tampered}: sha256 {slurmbuild.sha256(tampered)[:16]}..., expected "
                     f"{release.source.sha256[:16]}..."]  # fmt: skip
    assert slurmbuild._verified(tarball, release.source, tried) == tarball


def test_a_build_others_could_have_written_is_not_used(fake: tuple[Release, Path]) -> None:
    release, _ = fake
    prefix = slurmbuild.build(release, jobs=1)
    os.chmod(prefix / "sbin", 0o777)
    with pytest.raises(ReleaseError, match="writable by others"):
        release.check_trusted()
    os.chmod(prefix / "sbin", 0o755)
    release.check_trusted()
    os.chmod(prefix.parent, 0o777)  # a root others can write: nothing built or used there
    with pytest.raises(ReleaseError, match="writable by others"):
        release.check_trusted()
    (prefix / MARKER).unlink()
    with pytest.raises(ReleaseError, match=r"the build root: .* writable by others"):
        slurmbuild.build(release, jobs=1)
    os.chmod(prefix.parent, 0o755)


def test_build_slurm_script_answers_for_each_release() -> None:
    script = ROOT / "scripts" / "build-slurm"
    res = subprocess.run([script, "--slurm", "22.05"], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.startswith("debian")
    res = subprocess.run([script, "--slurm", "9.9"], capture_output=True, text=True)
    assert res.returncode == 1 and "unknown Slurm release '9.9'" in res.stderr


def test_local_slurm_script_runs_the_tooling_from_any_folder(tmp_path: Path) -> None:
    """scripts/local-slurm runs `python -m devtools.localslurm` (not installed) from anywhere."""
    script = ROOT / "scripts" / "local-slurm"
    res = subprocess.run(
        [script, "status", "--dir", str(tmp_path / "none")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (res.returncode, res.stdout, res.stderr) == (1, "down\n", "")
