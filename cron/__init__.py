"""The Slurm crontab emulator: scheduler tick, job folder scanning, status."""

# Load the config schema first: it imports cron.config, which needs rtool.config.types; importing
# cron.config before rtool.config would otherwise be a circular import.
import rtool.config  # noqa: F401
