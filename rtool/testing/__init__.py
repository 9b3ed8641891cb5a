"""Test and demo fixtures: the local Slurm cluster and local SMTP/Slack-like servers."""
