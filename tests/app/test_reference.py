"""The docs' reference tables are what the registries declare (tests/app/reference.py): a
changed default, help text or a new plug-in makes this fail until
`python -m tests.app.reference --write` is run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app import reference

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_docs_match_the_registries() -> None:
    assert reference.stale(DOCS) == [], "run: python -m tests.app.reference --write"


def test_every_table_is_in_the_docs() -> None:
    used = {name for page in DOCS.glob("*.md") for name, *_ in reference.blocks(page.read_text())}
    assert used == set(reference.TABLES)


def test_check_names_an_out_of_date_block(tmp_path: Path, capsys) -> None:
    page = tmp_path / "page.md"
    body = reference.render("channel-keys")
    page.write_text(
        f"x\n<!-- rtool:begin channel-keys -->\n{body}<!-- rtool:end channel-keys -->\n"
    )
    assert reference.main(["--docs", str(tmp_path), "--check"]) == 0
    page.write_text(page.read_text().replace("`10s`", "`5s`"))
    assert reference.main(["--docs", str(tmp_path), "--check"]) == 1
    assert "page.md: channel-keys" in capsys.readouterr().err
    assert reference.main(["--docs", str(tmp_path), "--write"]) == 0
    assert reference.stale(tmp_path) == []


def test_a_block_without_its_end_is_an_error() -> None:
    with pytest.raises(ValueError, match="no <!-- rtool:end channels -->"):
        list(reference.blocks("<!-- rtool:begin channels -->\n| x |\n"))


def test_the_tables_say_what_the_declarations_say() -> None:
    assert "| `max_used` | `--max-used` | `90%` | Used above -> CRITICAL. |" in (
        reference.render("watch-options", "disk")
    )
    assert "| `grace` | `--grace` | [cron] grace |" in reference.render("watch-options", "cron")
    assert "`--no-accounting`" in reference.render("watch-options", "run")
    assert "| `min_free` | `1GiB` |" in reference.render("preflight-keys")
