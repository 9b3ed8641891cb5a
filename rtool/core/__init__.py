"""The ground floor: config types and loading, units, state dir, processes, errors, Slurm.

Imports no feature package and nothing heavy (the shim imports parts of it).
"""
