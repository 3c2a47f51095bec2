"""Follow-up evals: the evals the reconciler creates for work that is due later (a failed
alloc's delayed replacement, a lost alloc's replacement once its client has stopped it, a
disconnected alloc's expiry)."""

from __future__ import annotations

from drover.model import Allocation, Evaluation
from drover.model.evaluation import EVAL_STATUS_PENDING, TRIGGER_RETRY_FAILED_ALLOC
from drover.scheduler.reconciler.inputs import EvalContext, JobState
from drover.scheduler.reconciler.results import RESCHEDULING_FOLLOWUP_DESC, ReconcileResults
from drover.scheduler.reschedule import BATCHED_FAILED_ALLOC_WINDOW


def new_followup_eval(
    job: JobState, ctx: EvalContext, trigger: str, wait_until: int, desc: str
) -> Evaluation:
    """A pending eval of the job, due at `wait_until`, following the eval being processed."""
    assert job.job is not None
    return Evaluation(
        id=ctx.new_id(),
        namespace=job.namespace,
        priority=ctx.eval_priority,
        type=job.job.type,
        triggered_by=trigger,
        job_id=job.job_id,
        status=EVAL_STATUS_PENDING,
        status_description=desc,
        wait_until=wait_until,
        previous_eval=ctx.eval_id,
    )


def reschedule_later_evals(
    later: list[tuple[Allocation, int]], job: JobState, ctx: EvalContext, results: ReconcileResults
) -> None:
    """Follow-up evals for the allocs to reschedule later, each alloc pointing at its eval."""
    for alloc, eval_id in _batched(later, job, ctx, results):
        results.attribute_updates[alloc.id] = alloc.model_copy(update={"followup_eval_id": eval_id})


def lost_later_evals(
    later: list[tuple[Allocation, int]], job: JobState, ctx: EvalContext, results: ReconcileResults
) -> dict[str, str]:
    """Follow-up evals for when the clients of lost allocs have stopped them themselves
    (`stop_on_client_after`); returns each alloc's eval ID, recorded as it is stopped."""
    return {alloc.id: eval_id for alloc, eval_id in _batched(later, job, ctx, results)}


def _batched(
    later: list[tuple[Allocation, int]], job: JobState, ctx: EvalContext, results: ReconcileResults
) -> list[tuple[Allocation, str]]:
    """One alloc-failure eval per batch of allocs due within a short window of the batch's
    first (Nomad's createLaterEvals); each alloc with its eval's ID."""
    out: list[tuple[Allocation, str]] = []
    if not later:
        return out
    later = sorted(later, key=lambda x: x[1])
    batch_start = later[0][1]
    evaluation = new_followup_eval(
        job, ctx, TRIGGER_RETRY_FAILED_ALLOC, batch_start, RESCHEDULING_FOLLOWUP_DESC
    )
    results.followup_evals.append(evaluation)
    for alloc, when in later:
        if when - batch_start >= BATCHED_FAILED_ALLOC_WINDOW:
            batch_start = when
            evaluation = new_followup_eval(
                job, ctx, TRIGGER_RETRY_FAILED_ALLOC, when, RESCHEDULING_FOLLOWUP_DESC
            )
            results.followup_evals.append(evaluation)
        out.append((alloc, evaluation.id))
    return out
