"""Placement scores for a best_score reconnect. The replica holds no placement metrics (they
are most of an alloc's size), so before scheduling a job with allocs to reconnect the worker
reads the scores of those allocs and their replacements from the projections
(drover.scheduler.reconciler.reconnecting)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from drover.model import Allocation, Evaluation
from drover.scheduler.reconciler.reconnecting import placement_score, reconnect_score_ids
from drover.scheduler.state import StateSnapshot

AllocsById = Callable[[list[str]], dict[str, Allocation]]


async def reconnect_scores(
    state: StateSnapshot, evaluation: Evaluation, allocs_by_id: AllocsById
) -> dict[str, float]:
    """By alloc ID, the placement scores the eval's reconciliation may compare; none read when
    no alloc of its job has to reconnect (nearly always)."""
    if evaluation.type not in ("service", "batch"):
        return {}
    ids = reconnect_score_ids(state.allocs_by_job(evaluation.namespace, evaluation.job_id))
    if not ids:
        return {}
    found = await asyncio.to_thread(allocs_by_id, sorted(ids))
    return {i: s for i, a in found.items() if (s := placement_score(a, {})) is not None}
