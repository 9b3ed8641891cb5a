"""A real Slurm on this machine for the tests, the benchmarks and the demo (not installed).

    python -m devtools.localslurm up|down|status ...   (scripts/local-slurm; control.py)

Modules: control (start, stop, status), nodeops (the `Cluster`: its files, node failures,
bounded waits), slurmconf (config files), daemons (processes, accounting),
releases and slurmbuild (22.05 from Debian, 24.11 built from source), scrontab (the 22.05
client, scrontab_client.c), users (a second Unix user). Kept free of imports: releases and
slurmbuild run on the standard library alone (scripts/setup, before the virtualenv exists).
"""
