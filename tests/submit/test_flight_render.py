"""`rtool submit --flight-recorder` (docs/guide/hangs.md): the rendered script turns PyTorch's
NCCL flight recorder on with a dump folder per launch beside the abort file, keeps what the
user exported, and renders nothing of it without the option."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from rtool.slurm_templates.config import SubmitConfig, SwitchesConfig
from rtool.slurm_templates.jobs import render_job
from rtool.slurm_templates.submit import SubmitRequest, build_job
from tests.submit.test_render import check_golden

END = "# ---- end of the rtool prelude\n"
VARS = (
    "TORCH_NCCL_TRACE_BUFFER_SIZE",
    "TORCH_NCCL_DUMP_ON_TIMEOUT",
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
    "RTOOL_FLIGHT_RECORDER",
)


def _script(tmp_path: Path, cfg: SubmitConfig | None = None, **kw: object) -> str:
    (tmp_path / "train.py").write_text("print('hi')\n")
    req = SubmitRequest(script=Path("train.py"), time="1:00:00", **kw)  # type: ignore[arg-type]
    job = build_job(req, cfg or SubmitConfig(), SwitchesConfig(), tmp_path)
    job.rtool = ["/opt/rtool/bin/rtool"]
    return render_job(job)


def test_golden_flight_recorder(tmp_path: Path) -> None:
    text = _script(tmp_path, flight_recorder=True).replace(str(tmp_path), "/RUN")
    assert "export RTOOL_FLIGHT_RECORDER=1" in text
    assert '        _rtool_flight_recorder "$launch"\n' in text
    check_golden("training_flight_recorder.slurm", text)


def test_off_by_default_and_on_from_the_config(tmp_path: Path) -> None:
    assert "TORCH_NCCL" not in _script(tmp_path)
    assert "_rtool_flight_recorder 0" in _script(tmp_path, SubmitConfig(flight_recorder=True))


def _run_prelude(tmp_path: Path, probe: str, **env: str) -> list[str]:
    prelude = _script(tmp_path, flight_recorder=True)
    prelude = prelude[: prelude.index(END)]
    res = subprocess.run(
        ["bash", "-c", prelude + probe],
        text=True,
        capture_output=True,
        cwd=tmp_path,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "91", **env},
        timeout=30,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout.split("\0")


def test_each_launch_gets_a_private_folder_beside_the_abort_file(tmp_path: Path) -> None:
    probe = '_rtool_flight_recorder 1; printf "%s\\0" "$RTOOL_ABORT_FILE"' + "".join(
        f' "${{{name}:-}}"' for name in VARS
    )
    abort, size, on_timeout, prefix, flag = _run_prelude(tmp_path, probe)[:5]
    assert (size, on_timeout, flag) == ("2000", "1", "1")
    assert prefix == f"{abort}.nccl-1/nccl_trace_rank_"
    assert Path(abort).parent.parent == tmp_path  # the attempt's own folder (mktemp -d)
    for launch in (0, 1):
        folder = Path(f"{abort}.nccl-{launch}")
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and not folder.is_symlink()


def test_values_the_user_exported_are_kept(tmp_path: Path) -> None:
    probe = '_rtool_flight_recorder 1; printf "%s\\0"' + "".join(f' "${{{n}:-}}"' for n in VARS)
    got = _run_prelude(
        tmp_path,
        probe,
        TORCH_NCCL_TRACE_BUFFER_SIZE="500",
        TORCH_NCCL_DUMP_ON_TIMEOUT="0",
        TORCH_NCCL_DEBUG_INFO_TEMP_FILE="/scratch/mine/fr_",
    )
    assert got[:3] == ["500", "0", "/scratch/mine/fr_"]
    assert not list(tmp_path.glob("*/*.nccl-*"))  # no folder of rtool's: yours is used
