"""rtool: keep long ML training runs on Slurm alive and watched.

Kept free of imports: `import rtool.shim` must stay light.

`__version__` is the one source of the version: pyproject.toml reads it at build time, and
`rtool --version`, `rtool config show`, the shim's heartbeat, the run ledger and the state dir
record it. The distribution is `rtool-slurm` (`rtool` on PyPI is someone else's project).
"""

__version__ = "0.2.0"
DISTRIBUTION = "rtool-slurm"
