"""Properties of the checkpoint watchdog's parsers and options: the step in a checkpoint's
name, its remembered record in the state dir, and every option of `rtool watch checkpoint`
given any value (one line, exit 3, never a traceback)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rtool.core.checkpoints import Ckpt
from rtool.core.ckptscan import step_of
from tests.hardening.conftest import no_traceback
from tests.hardening.test_properties import CLI, TEXT, VALUES

WORDS = st.sampled_from(["step", "global_step", "checkpoint", "iter", "ckpt", "STEP"])


@given(
    head=st.sampled_from(["", "epoch=3-", "model_", "run.", "x-"]),
    word=WORDS,
    sep=st.sampled_from(["", "_", "-", "="]),
    n=st.integers(min_value=0, max_value=10**15),
    width=st.integers(min_value=0, max_value=12),
    tail=st.sampled_from(["", ".ckpt", ".pt", ".safetensors", "-v1.ckpt"]),
)
def test_the_step_is_the_number_after_the_last_step_word(
    head: str, word: str, sep: str, n: int, width: int, tail: str
) -> None:
    assume(not (word[-1].isdigit()))
    assert step_of(f"{head}{word}{sep}{n:0{width}d}{tail}") == n


@given(name=st.text(max_size=80))
def test_any_name_gives_a_step_or_none(name: str) -> None:
    step = step_of(name)
    assert step is None or (isinstance(step, int) and 0 <= step < 10**18)


@given(
    record=st.one_of(
        VALUES,
        st.dictionaries(
            st.sampled_from(["name", "step", "size", "files", "mtime", "newest", "uid", "x"]),
            VALUES,
        ),
    )
)
def test_a_remembered_record_of_any_shape(record: Any) -> None:
    c = Ckpt.from_state(record)
    assert c is None or (isinstance(c, Ckpt) and isinstance(c.size, int))


@settings(parent=CLI)
@given(value=TEXT)
def test_watch_checkpoint_options(cli: Any, tmp_path: Path, value: str) -> None:
    assume(value.strip() not in ("--help", "-h"))
    (tmp_path / "ckpt" / "step_1").mkdir(parents=True, exist_ok=True)
    for flag in ("--late", "--settle", "--min-size", "--keep-last", "--max-age", "--marker"):
        res = cli("watch", "checkpoint", str(tmp_path / "ckpt"), flag, value, "--no-notify")
        no_traceback(res.err)
        assert res.code in (0, 1, 2, 3), (flag, res.code, res.err)
        if res.err.strip():
            assert res.code == 3 and len(res.err.strip().splitlines()) == 1, (flag, res.err)
