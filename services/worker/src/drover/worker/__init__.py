"""Scheduling workers: take ready evals, run the scheduling core on a replica, submit plans."""
