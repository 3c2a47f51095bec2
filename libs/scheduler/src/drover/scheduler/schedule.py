"""The one entry point: run the scheduler an eval's type calls for."""

from __future__ import annotations

from drover.model import Evaluation
from drover.scheduler.generic import GenericScheduler
from drover.scheduler.plan import SchedulerResult
from drover.scheduler.state import StateSnapshot
from drover.scheduler.system import SystemScheduler


def schedule(
    state: StateSnapshot, evaluation: Evaluation, now: int, *, full_scan: bool = False
) -> SchedulerResult:
    """One scheduling pass for `evaluation` over `state` at time `now` (Unix ns)."""
    if evaluation.type in ("system", "sysbatch"):
        return SystemScheduler(state, evaluation, now).process()
    if evaluation.type in ("service", "batch"):
        return GenericScheduler(state, evaluation, now, full_scan=full_scan).process()
    raise ValueError(f"unknown scheduler type {evaluation.type!r}")
