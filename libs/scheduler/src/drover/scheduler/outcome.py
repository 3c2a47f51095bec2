"""What both schedulers' passes share: the randomness an eval's pass is seeded with, and how a
pass ends (the eval complete, or a blocked eval for what could not be placed)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from drover.model import Evaluation
from drover.model.evaluation import (
    EVAL_STATUS_BLOCKED,
    EVAL_STATUS_COMPLETE,
    TRIGGER_QUEUED_ALLOCS,
)
from drover.scheduler.plan import Plan, SchedulerResult

BLOCKED_EVAL_FAILED_PLACEMENTS = "created to place remaining allocations"


def eval_seed(evaluation: Evaluation, index: int) -> int:
    """Randomness is seeded from the eval (and the snapshot it runs on), never global."""
    h = hashlib.blake2b(f"{evaluation.id}/{index}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big")


def finish_failed(
    evaluation: Evaluation,
    plan: Plan,
    creates: list[Evaluation],
    *,
    failed: bool,
    class_eligibility: dict[str, bool],
    escaped: bool,
    new_id: Callable[[], str],
    now: int,
) -> SchedulerResult:
    """The result of a pass, given whether some placements failed: a blocked eval is created
    (one per job, TriggeredBy queued-allocs) - or, when the eval being processed is itself the
    blocked one, it is re-blocked with fresh class eligibility instead."""
    if failed and evaluation.status == EVAL_STATUS_BLOCKED:
        evaluation.class_eligibility = class_eligibility
        evaluation.escaped_computed_class = escaped
        return SchedulerResult(plan=plan, eval=evaluation, create_evals=creates, reblock=True)
    evaluation.status = EVAL_STATUS_COMPLETE
    blocked: Evaluation | None = None
    if failed:
        blocked = Evaluation(
            id=new_id(),
            namespace=evaluation.namespace,
            priority=evaluation.priority,
            type=evaluation.type,
            triggered_by=TRIGGER_QUEUED_ALLOCS,
            job_id=evaluation.job_id,
            job_modify_index=evaluation.job_modify_index,
            status=EVAL_STATUS_BLOCKED,
            status_description=BLOCKED_EVAL_FAILED_PLACEMENTS,
            previous_eval=evaluation.id,
            class_eligibility=class_eligibility,
            escaped_computed_class=escaped,
            create_time=now,
            modify_time=now,
        )
        evaluation.blocked_eval = blocked.id
    return SchedulerResult(plan=plan, eval=evaluation, create_evals=creates, blocked_eval=blocked)
