"""What happens to an eval around a scheduling pass: plan-attempt limits, the delivery limit and
the follow-up evals they create (Nomad's worker and eval broker rules, as pure functions)."""

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
BLOCKED_EVAL_MAX_PLAN_DESC = "created due to placement conflicts"


def plan_attempts(eval_type: str) -> int:
    return PLAN_ATTEMPTS.get(eval_type, 5)


def nack_delay(deliveries: int) -> float:
    """Seconds before a nacked eval is delivered again: 1 s after the first, then (n-1) x 20 s."""
    return 1.0 if deliveries <= 1 else (deliveries - 1) * 20.0


def _id(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _successor(ev: Evaluation, rng: random.Random, now: int, **fields: Any) -> Evaluation:
    """A new eval for the same job that follows `ev`."""
    return Evaluation(
        id=_id(rng),
        namespace=ev.namespace,
        priority=ev.priority,
        type=ev.type,
        job_id=ev.job_id,
        previous_eval=ev.id,
        create_time=now,
        modify_time=now,
        **fields,
    )


def _failed(ev: Evaluation, now: int, description: str, **fields: Any) -> Evaluation:
    return ev.model_copy(
        update={"status": EVAL_STATUS_FAILED, "status_description": description, "modify_time": now, **fields}
    )


def delivery_limit_failure(ev: Evaluation, now: int, rng: random.Random) -> list[Evaluation]:
    """The eval reached the delivery limit: it fails, and a follow-up eval is created to try
    again after 1 min + random [0, 5 min)."""
    wait = MINUTE + int(rng.random() * 5 * MINUTE)
    follow = _successor(
        ev,
        rng,
        now,
        triggered_by=TRIGGER_FAILED_FOLLOW_UP,
        status=EVAL_STATUS_PENDING,
        wait=wait,
        wait_until=now + wait,
    )
    failed = _failed(ev, now, f"evaluation reached delivery limit ({DELIVERY_LIMIT})", next_eval=follow.id)
    return [failed, follow]


def max_attempts_failure(ev: Evaluation, attempts: int, now: int, rng: random.Random) -> list[Evaluation]:
    """Plans kept being rejected: the eval fails and a blocked eval (max-plan-attempts) takes
    its place, released by the broker every minute or when capacity may have appeared."""
    blocked = _successor(
        ev,
        rng,
        now,
        triggered_by=TRIGGER_MAX_PLANS,
        status=EVAL_STATUS_BLOCKED,
        status_description=BLOCKED_EVAL_MAX_PLAN_DESC,
    )
    failed = _failed(ev, now, f"maximum attempts reached ({attempts})", blocked_eval=blocked.id)
    return [failed, blocked]
