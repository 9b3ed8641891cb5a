"""`python -m rtool ...` = the `rtool` command (the batch script runs the pre-flight this way)."""

from rtool.cli import app

app()
