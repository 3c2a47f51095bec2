"""Attempt and delivery limits around a scheduling pass (spec: eval broker, workers)."""

from __future__ import annotations

import random

import pytest

from drover.model import Evaluation
from drover.model.durations import MINUTE, SECOND
from drover.scheduler.evalflow import (
    delivery_limit_failure,
    max_attempts_failure,
    nack_delay,
    plan_attempts,
)

NOW = 1_700_000_000_000_000_000


@pytest.mark.parametrize(("deliveries", "delay"), [(1, 1.0), (2, 20.0), (3, 40.0), (4, 60.0)])
def test_nack_delay(deliveries: int, delay: float) -> None:
    assert nack_delay(deliveries) == delay


@pytest.mark.parametrize(("kind", "n"), [("service", 5), ("batch", 2), ("system", 5), ("sysbatch", 5)])
def test_plan_attempts(kind: str, n: int) -> None:
    assert plan_attempts(kind) == n


def test_delivery_limit_fails_and_follows_up_within_1_to_6_minutes() -> None:
    evaluation = Evaluation(id="e1", job_id="web", type="service", priority=70)
    for seed in range(50):
        failed, follow = delivery_limit_failure(evaluation, NOW, random.Random(seed))
        assert (
            failed.status == "failed" and failed.status_description == "evaluation reached delivery limit (3)"
        )
        assert failed.next_eval == follow.id and follow.previous_eval == "e1"
        assert follow.triggered_by == "failed-follow-up" and follow.status == "pending"
        assert follow.priority == 70 and follow.job_id == "web"
        assert MINUTE <= follow.wait_until - NOW < 6 * MINUTE
        assert follow.wait == follow.wait_until - NOW and follow.create_time == NOW
        assert failed.modify_time == NOW


@pytest.mark.parametrize(
    ("baseline", "spread"), [(0, 0), (SECOND, 0), (SECOND, SECOND), (2 * MINUTE, 10 * MINUTE)]
)
def test_delivery_limit_follow_up_delay_is_the_baseline_plus_part_of_the_range(
    baseline: int, spread: int
) -> None:
    evaluation = Evaluation(id="e1", job_id="web")
    waits = set()
    for seed in range(30):
        _, follow = delivery_limit_failure(
            evaluation, NOW, random.Random(seed), baseline=baseline, spread=spread
        )
        assert baseline <= follow.wait < baseline + max(spread, 1)
        waits.add(follow.wait)
    assert len(waits) == (1 if spread == 0 else 30)


@pytest.mark.parametrize(
    ("kind", "job_exists"),
    [pytest.param("_core", True, id="core-eval"), pytest.param("service", False, id="job-gone")],
)
def test_delivery_limit_without_follow_up(kind: str, job_exists: bool) -> None:
    evaluation = Evaluation(id="e1", job_id="web", type=kind)
    (failed,) = delivery_limit_failure(evaluation, NOW, random.Random(1), job_exists=job_exists)
    assert failed.status == "failed" and failed.next_eval == ""


def test_max_attempts_fails_with_a_blocked_eval() -> None:
    evaluation = Evaluation(id="e1", job_id="web", type="batch")
    failed, blocked = max_attempts_failure(evaluation, 2, NOW, random.Random(1))
    assert failed.status == "failed" and failed.status_description == "maximum attempts reached (2)"
    assert blocked.status == "blocked" and blocked.triggered_by == "max-plan-attempts"
    assert blocked.status_description == "created due to placement conflicts"
    assert failed.blocked_eval == blocked.id
