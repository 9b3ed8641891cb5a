"""The Slurm crontab emulator: scheduler tick, job folder scanning, status."""
