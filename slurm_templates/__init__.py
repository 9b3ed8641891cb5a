"""jinja2 sbatch templates and their renderer."""
