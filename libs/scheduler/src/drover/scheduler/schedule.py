"""The one entry point: run the scheduler an eval's type calls for."""

from __future__ import annotations

from collections.abc import Mapping

from drover.model import Evaluation
from drover.scheduler.generic import GenericScheduler
from drover.scheduler.plan import SchedulerResult
from drover.scheduler.state import StateSnapshot
from drover.scheduler.system import SystemScheduler


def schedule(
    state: StateSnapshot,
    evaluation: Evaluation,
    now: int,
    *,
    full_scan: bool = False,
    placement_scores: Mapping[str, float] | None = None,
) -> SchedulerResult:
    """One scheduling pass for `evaluation` over `state` at time `now` (Unix ns).
    `placement_scores`: by alloc ID, the placement scores of allocs whose metrics `state`
    does not hold (drover.scheduler.reconciler.reconnecting)."""
    if evaluation.type in ("system", "sysbatch"):
        return SystemScheduler(state, evaluation, now).process()
    if evaluation.type in ("service", "batch"):
        return GenericScheduler(
            state, evaluation, now, full_scan=full_scan, placement_scores=placement_scores
        ).process()
    raise ValueError(f"unknown scheduler type {evaluation.type!r}")
