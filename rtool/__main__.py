"""`python -m rtool ...` = the `rtool` command (the batch script runs the pre-flight this way)."""

from rtool.app.cli import app

app()
