"""The client's local restart decisions (restart block: attempts, interval, delay, mode)."""

from __future__ import annotations

import random

import pytest

from drover.control.client.restarttracker import DONE, FAIL, RESTART, RestartTracker
from drover.model.durations import SECOND as S
from drover.model.job import RestartPolicy, TaskLifecycle


def tracker(
    attempts: int, interval: int, delay: int, mode: str = "fail", job_type: str = "service"
) -> RestartTracker:
    return RestartTracker(
        RestartPolicy(attempts=attempts, interval=interval, delay=delay, mode=mode), job_type
    )


def test_fail_mode_restarts_attempts_times_then_fails() -> None:
    t, rng = tracker(2, 60 * S, 5 * S), random.Random(1)
    d1, d2, d3 = (t.on_exit(now, 1, rng) for now in (10 * S, 20 * S, 30 * S))
    assert (d1.action, d2.action, d3.action) == (RESTART, RESTART, FAIL)
    assert all(5 * S <= d.delay <= 5 * S * 1.25 for d in (d1, d2))
    assert d3.reason == "Exceeded allowed attempts"


def test_count_starts_afresh_after_the_interval() -> None:
    t, rng = tracker(1, 60 * S, S), random.Random(1)
    assert t.on_exit(10 * S, 1, rng).action == RESTART
    assert t.on_exit(20 * S, 1, rng).action == FAIL
    t2 = tracker(1, 60 * S, S)
    assert t2.on_exit(10 * S, 1, rng).action == RESTART
    assert t2.on_exit(71 * S, 1, rng).action == RESTART  # a new interval began at 71 s


def test_delay_mode_waits_out_the_interval_instead_of_failing() -> None:
    t, rng = tracker(1, 60 * S, S, mode="delay"), random.Random(1)
    assert t.on_exit(10 * S, 1, rng).action == RESTART
    d = t.on_exit(20 * S, 1, rng)
    assert d.action == RESTART and d.delay == 50 * S  # until the interval (10 s .. 70 s) ends
    assert t.on_exit(75 * S, 1, rng).action in (RESTART, FAIL)


@pytest.mark.parametrize(
    ("job_type", "exit_code", "want"),
    [
        ("batch", 0, DONE),
        ("sysbatch", 0, DONE),
        ("batch", 2, RESTART),
        ("service", 0, RESTART),
        ("system", 0, RESTART),
    ],
)
def test_success_ends_batch_tasks_only(job_type: str, exit_code: int, want: str) -> None:
    assert tracker(3, 60 * S, S, job_type=job_type).on_exit(S, exit_code, random.Random(1)).action == want


def test_zero_attempts_fails_at_the_first_exit_and_unrecoverable_start_errors_fail_at_once() -> None:
    rng = random.Random(1)
    assert tracker(0, 60 * S, S).on_exit(S, 1, rng).action == FAIL
    assert tracker(5, 60 * S, S).on_start_error(False, S, rng).action == FAIL
    assert tracker(5, 60 * S, S).on_start_error(True, S, rng).action == RESTART


@pytest.mark.parametrize(
    ("job_type", "hook", "sidecar", "restarted"),
    [
        ("service", "", False, True),  # a main service task runs until stopped
        ("batch", "", False, False),
        ("sysbatch", "", False, False),
        ("service", "prestart", False, False),  # an ephemeral prestart task is done
        ("service", "prestart", True, True),  # a sidecar runs beside the main tasks
        ("batch", "prestart", True, True),
        ("service", "poststart", False, False),
        ("batch", "poststart", True, True),
        ("service", "poststop", False, False),
        ("service", "poststop", True, False),  # poststop never restarts on success
    ],
)
def test_a_successful_exit_restarts_the_task_as_its_lifecycle_says(
    job_type: str, hook: str, sidecar: bool, restarted: bool
) -> None:
    lifecycle = TaskLifecycle(hook=hook, sidecar=sidecar) if hook else None
    t = RestartTracker(RestartPolicy(attempts=3, interval=60 * S, delay=S, mode="fail"), job_type, lifecycle)
    decision = t.on_exit(S, 0, random.Random(1))
    assert decision.action == (RESTART if restarted else DONE)
    # a failure is restarted whatever the lifecycle (within the policy)
    assert t.on_exit(2 * S, 1, random.Random(1)).action == RESTART
