"""What happens to an eval around a scheduling pass: plan-attempt limits, the delivery limit and
the follow-up evals they create (Nomad's worker, eval broker and failed-eval reaper rules, as pure
functions).

An eval handed out DELIVERY_LIMIT times without being acked goes to the failed queue; the leader
reaps it there (`delivery_limit_failure`): failed, with a failed-follow-up eval after a delay of
the baseline plus a random share of the range (Nomad's EvalFailedFollowupBaselineDelay, 1 min,
and EvalFailedFollowupDelayRange, 5 min), so a job whose evals keep failing is tried again once
the cluster has hopefully settled."""

from __future__ import annotations

import random
import uuid
from typing import Any

from drover.model.durations import MINUTE
from drover.model.evaluation import (
    EVAL_STATUS_BLOCKED,
    EVAL_STATUS_FAILED,
    EVAL_STATUS_PENDING,
    TRIGGER_FAILED_FOLLOW_UP,
    TRIGGER_MAX_PLANS,
    Evaluation,
)

# Plan submissions per eval before giving up (Nomad: service 5, batch 2, system 5).
PLAN_ATTEMPTS = {"service": 5, "batch": 2, "system": 5, "sysbatch": 5}
DELIVERY_LIMIT = 3
FAILED_FOLLOWUP_BASELINE = MINUTE
FAILED_FOLLOWUP_RANGE = 5 * MINUTE
# Nomad's core (garbage collection) evals: a failed one gets no follow-up, the next pass replaces it.
CORE_EVAL_TYPE = "_core"
BLOCKED_EVAL_MAX_PLAN_DESC = "created due to placement conflicts"


def plan_attempts(eval_type: str) -> int:
    return PLAN_ATTEMPTS.get(eval_type, 5)


def nack_delay(deliveries: int) -> float:
    """Seconds before a nacked eval is delivered again: 1 s after the first, then (n-1) x 20 s."""
    return 1.0 if deliveries <= 1 else (deliveries - 1) * 20.0


def _id(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _successor(evaluation: Evaluation, rng: random.Random, now: int, **fields: Any) -> Evaluation:
    """A new eval for the same job that follows `evaluation`."""
    return Evaluation(
        id=_id(rng),
        namespace=evaluation.namespace,
        priority=evaluation.priority,
        type=evaluation.type,
        job_id=evaluation.job_id,
        previous_eval=evaluation.id,
        create_time=now,
        modify_time=now,
        **fields,
    )


def _failed(evaluation: Evaluation, now: int, description: str, **fields: Any) -> Evaluation:
    return evaluation.model_copy(
        update={"status": EVAL_STATUS_FAILED, "status_description": description, "modify_time": now, **fields}
    )


def delivery_limit_failure(
    evaluation: Evaluation,
    now: int,
    rng: random.Random,
    *,
    job_exists: bool = True,
    baseline: int = FAILED_FOLLOWUP_BASELINE,
    spread: int = FAILED_FOLLOWUP_RANGE,
) -> list[Evaluation]:
    """The eval reached the delivery limit: it fails and, unless it is a core eval or its job is
    gone, a failed-follow-up eval (its NextEval) tries again after `baseline` + random
    [0, `spread`) ns."""
    description = f"evaluation reached delivery limit ({DELIVERY_LIMIT})"
    if evaluation.type == CORE_EVAL_TYPE or not job_exists:
        return [_failed(evaluation, now, description)]
    wait = baseline + (int(rng.random() * spread) if spread > 0 else 0)
    follow = _successor(
        evaluation,
        rng,
        now,
        triggered_by=TRIGGER_FAILED_FOLLOW_UP,
        job_modify_index=evaluation.job_modify_index,
        status=EVAL_STATUS_PENDING,
        wait=wait,
        wait_until=now + wait,
    )
    return [_failed(evaluation, now, description, next_eval=follow.id), follow]


def max_attempts_failure(
    evaluation: Evaluation, attempts: int, now: int, rng: random.Random
) -> list[Evaluation]:
    """Plans kept being rejected: the eval fails and a blocked eval (max-plan-attempts) takes
    its place, released by the broker every minute or when capacity may have appeared."""
    blocked = _successor(
        evaluation,
        rng,
        now,
        triggered_by=TRIGGER_MAX_PLANS,
        status=EVAL_STATUS_BLOCKED,
        status_description=BLOCKED_EVAL_MAX_PLAN_DESC,
    )
    failed = _failed(evaluation, now, f"maximum attempts reached ({attempts})", blocked_eval=blocked.id)
    return [failed, blocked]
