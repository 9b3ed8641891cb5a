"""Slurm.sacct against the real local Slurm (with and without accounting storage)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from devtools.localslurm import control
from rtool.core.slurm import AccountingDisabled, Slurm, SlurmError


def _conf_without_accounting(tmp_path: Path) -> Path:
    text = Path(os.environ["SLURM_CONF"]).read_text()
    text = re.sub(r"(?m)^AccountingStorage\w*=.*$", "", text)
    conf = tmp_path / "slurm.conf"
    conf.write_text(text + "\nAccountingStorageType=accounting_storage/none\n")
    return conf


def test_disabled_accounting_is_its_own_error(
    slurm_cluster: control.Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(_conf_without_accounting(tmp_path)))
    s = Slurm(timeout=20)
    assert s.accounting_available() is False
    with pytest.raises(AccountingDisabled, match="accounting storage is disabled"):
        s.sacct(job_ids=["1"])
    assert issubclass(AccountingDisabled, SlurmError)
