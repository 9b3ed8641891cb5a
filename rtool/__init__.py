"""rtool: keep long ML training runs on Slurm alive and watched.

Kept free of imports: `import rtool.shim` must stay light.
"""

__version__ = "0.1.0"
