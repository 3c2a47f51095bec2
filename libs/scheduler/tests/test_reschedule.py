"""Rescheduling of failed allocs (Nomad's reschedule block): the pure arithmetic of
`drover.scheduler.reschedule`, and chains of replacements built with it (each failure's delay
derived from the tracker its predecessor left). The reconciler's use of it, through the whole
control loop, is in `test_reconciler_reschedule.py`.
"""

from __future__ import annotations

from typing import Any

import pytest

from drover.model import (
    Allocation,
    Job,
    RescheduleEvent,
    ReschedulePolicy,
    RescheduleTracker,
    Task,
    TaskGroup,
    TaskState,
)
from drover.model.canonicalize import canonicalize
from drover.model.durations import HOUR, MINUTE, SECOND
from drover.scheduler.reschedule import (
    attempts_in_interval,
    new_reschedule_tracker,
    next_delay,
    next_reschedule_time,
)

from .conftest import tracker

T0 = 1_700_000_000_000_000_000
S = SECOND


# --------------------------------------------------------------------------------------------
# builders
# --------------------------------------------------------------------------------------------


def policy(
    fn: str = "constant",
    delay: int = 5 * S,
    *,
    max_delay: int = 0,
    attempts: int = 0,
    interval: int = 0,
    unlimited: bool = True,
) -> ReschedulePolicy:
    return ReschedulePolicy(
        attempts=attempts,
        interval=interval,
        delay=delay,
        delay_function=fn,
        max_delay=max_delay,
        unlimited=unlimited,
    )


def failed(
    *,
    fail_at: int | list[int] = T0,
    events: list[tuple[int, int]] | None = None,
    alloc_id: str = "a1",
    node_id: str = "n1",
    **kw: Any,
) -> Allocation:
    """A failed alloc whose task(s) finished at `fail_at` (a list: one task per time)."""
    times = fail_at if isinstance(fail_at, list) else [fail_at]
    return Allocation(
        id=alloc_id,
        node_id=node_id,
        name="web.g[0]",
        job_id="web",
        task_group="g",
        client_status=kw.pop("client_status", "failed"),
        task_states={
            f"t{i}": TaskState(state="dead", failed=True, finished_at=t) for i, t in enumerate(times)
        },
        reschedule_tracker=tracker(*events) if events else None,
        **kw,
    )


# --------------------------------------------------------------------------------------------
# pure arithmetic: next_delay
# --------------------------------------------------------------------------------------------


def simulate_chain(pol: ReschedulePolicy, run_for: list[int]) -> list[int]:
    """A chain of replacements: alloc i starts, runs `run_for[i]`, fails; its replacement is
    created at the reschedule time with the tracker `new_reschedule_tracker` builds. Returns the
    delay applied after each failure."""
    delays: list[int] = []
    start = T0
    prev_tracker: RescheduleTracker | None = None
    for i, run in enumerate(run_for):
        fail_at = start + run
        alloc = Allocation(
            id=f"a{i}",
            node_id=f"n{i % 3}",
            client_status="failed",
            task_states={"t": TaskState(state="dead", failed=True, finished_at=fail_at)},
            reschedule_tracker=prev_tracker,
        )
        when, eligible = next_reschedule_time(alloc, pol)
        assert eligible, f"failure {i} should be reschedulable"
        delays.append(when - fail_at)
        prev_tracker = new_reschedule_tracker(alloc, pol, when)
        # The event recorded on the replacement is the delay that was applied.
        assert prev_tracker.events[-1].delay == when - fail_at
        assert prev_tracker.events[-1].reschedule_time == when
        assert prev_tracker.events[-1].prev_alloc_id == f"a{i}"
        start = when
    return delays


@pytest.mark.parametrize(
    ("pol", "run_for", "expected"),
    [
        # A fibonacci delay from 5 s: 5, 5, 10, 15, 25.
        (policy("fibonacci", 5 * S, max_delay=HOUR), [S] * 5, [5, 5, 10, 15, 25]),
        (policy("exponential", 5 * S, max_delay=20 * S), [S] * 4, [5, 10, 20, 20]),
        (policy("constant", 5 * S), [S] * 3, [5, 5, 5]),
        # constant ignores max_delay entirely.
        (policy("constant", 30 * S, max_delay=10 * S), [S] * 3, [30, 30, 30]),
        # fibonacci capped.
        (policy("fibonacci", 5 * S, max_delay=20 * S), [S] * 6, [5, 5, 10, 15, 20, 20]),
        # exponential without a cap keeps doubling.
        (policy("exponential", 5 * S), [S] * 6, [5, 10, 20, 40, 80, 160]),
        # max_delay reset: capped at 20 s, then an alloc ran 25 s (> 20 s) -> back to 5 s.
        (policy("exponential", 5 * S, max_delay=20 * S), [S, S, S, S, 25 * S, S], [5, 10, 20, 20, 5, 10]),
        # ... but running exactly the capped delay is not "longer than" it: no reset.
        (policy("exponential", 5 * S, max_delay=20 * S), [S, S, S, 20 * S], [5, 10, 20, 20]),
        # fibonacci reset: capped, ran long -> 5, then the series starts over (5, 5, 10).
        (
            policy("fibonacci", 5 * S, max_delay=20 * S),
            [S, S, S, S, S, S, 25 * S, S, S],
            [5, 5, 10, 15, 20, 20, 5, 5, 10],
        ),
        # The service default (30 s exponential, capped at 1 h).
        (
            policy("exponential", 30 * S, max_delay=HOUR),
            [S] * 9,
            [30, 60, 120, 240, 480, 960, 1920, 3600, 3600],
        ),
    ],
    ids=[
        "fib-seed-example",
        "exp-max20",
        "constant",
        "constant-ignores-max",
        "fib-capped",
        "exp-uncapped",
        "exp-reset-after-long-run",
        "exp-no-reset-at-exact-cap",
        "fib-reset-restarts-series",
        "service-default",
    ],
)
def test_delay_chain(pol: ReschedulePolicy, run_for: list[int], expected: list[int]) -> None:
    assert simulate_chain(pol, run_for) == [d * S for d in expected]


@pytest.mark.parametrize(
    ("last_delays", "ran_for", "expected"),
    [
        ([5, 10, 20], 21 * S, 5),  # capped and ran longer than the cap: reset
        ([5, 10, 20], 20 * S, 20),  # exactly the cap is not longer
        ([5, 10, 20], 1 * S, 20),  # short run: stays capped
        ([5, 10], HOUR, 20),  # 10 x 2 == 20 is not above max_delay: no cap, so no reset either
        ([5], HOUR, 10),  # below the cap a long run changes nothing
    ],
)
def test_exponential_max_delay_reset(last_delays: list[int], ran_for: int, expected: int) -> None:
    pol = policy("exponential", 5 * S, max_delay=20 * S)
    # Reschedules 1 min apart; the last one started the alloc that now failed.
    events = [(T0 + i * MINUTE, d * S) for i, d in enumerate(last_delays)]
    last_start = events[-1][0]
    alloc = failed(fail_at=last_start + ran_for, events=events)
    assert next_delay(alloc, pol) == expected * S


@pytest.mark.parametrize(
    ("last_delays", "ran_for", "expected"),
    [
        ([10, 15], S, 20),  # 25 capped at 20
        ([15, 20], 25 * S, 5),  # capped and ran past the cap: reset to delay
        ([20, 5], S, 5),  # right after a reset (max, delay): the series restarts at delay
        ([20, 5, 5], S, 10),  # ... and continues 5 + 5
        ([20, 20], S, 20),  # stays at the cap
        ([5], S, 5),  # a single event: the second delay equals the first
        ([5, 5], S, 10),
    ],
)
def test_fibonacci_reset_rule(last_delays: list[int], ran_for: int, expected: int) -> None:
    pol = policy("fibonacci", 5 * S, max_delay=20 * S)
    events = [(T0 + i * MINUTE, d * S) for i, d in enumerate(last_delays)]
    alloc = failed(fail_at=events[-1][0] + ran_for, events=events)
    assert next_delay(alloc, pol) == expected * S


@pytest.mark.parametrize("fn", ["constant", "exponential", "fibonacci"])
def test_first_delay_is_delay(fn: str) -> None:
    assert next_delay(failed(), policy(fn, 7 * S, max_delay=HOUR)) == 7 * S


def test_no_policy_means_no_delay() -> None:
    assert next_delay(failed(events=[(T0, 5 * S)]), None) == 0


# --------------------------------------------------------------------------------------------
# pure arithmetic: attempts and eligibility
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ages", "attempts", "expected"),
    [
        ([], 3, 0),
        ([10 * MINUTE], 3, 1),
        ([10 * MINUTE, 59 * MINUTE], 3, 2),
        ([10 * MINUTE, 59 * MINUTE, 61 * MINUTE, 2 * HOUR], 3, 2),  # older than the interval: out
        ([HOUR], 3, 0),  # exactly the interval old: out of the window (Nomad: timeDiff < interval)
        ([HOUR - 1], 3, 1),
        ([S, 2 * S, 3 * S], 3, 3),
        ([S, 2 * S], 0, 0),  # attempts 0 (unlimited or disabled) counts nothing
    ],
)
def test_attempts_in_interval(ages: list[int], attempts: int, expected: int) -> None:
    fail_time = T0 + 10 * HOUR
    pol = policy(attempts=attempts, interval=HOUR, unlimited=attempts == 0)
    tr = tracker(*[(fail_time - age, 5 * S) for age in ages]) if ages else None
    assert attempts_in_interval(tr, pol, fail_time) == expected


@pytest.mark.parametrize(
    ("pol", "ages", "eligible"),
    [
        # unlimited: always, whatever the history
        (policy("exponential", 30 * S, max_delay=HOUR), [], True),
        (policy("exponential", 30 * S, max_delay=HOUR), [S * i for i in range(1, 11)], True),
        # limited attempts within a sliding interval
        (policy(attempts=2, interval=HOUR, unlimited=False), [], True),
        (policy(attempts=2, interval=HOUR, unlimited=False), [10 * MINUTE], True),
        (policy(attempts=2, interval=HOUR, unlimited=False), [10 * MINUTE, 20 * MINUTE], False),
        (policy(attempts=2, interval=HOUR, unlimited=False), [10 * MINUTE, 2 * HOUR], True),
        (policy(attempts=2, interval=HOUR, unlimited=False), [2 * HOUR, 3 * HOUR], True),
        (policy(attempts=1, interval=24 * HOUR, unlimited=False), [23 * HOUR], False),
        (policy(attempts=1, interval=24 * HOUR, unlimited=False), [25 * HOUR], True),
        # the next delay must fit inside the interval
        (policy("constant", 2 * MINUTE, attempts=3, interval=MINUTE, unlimited=False), [10 * HOUR], False),
        # disabled: attempts 0 and unlimited false -> never
        (policy(attempts=0, unlimited=False), [], False),
        (policy(attempts=0, interval=HOUR, unlimited=False), [2 * HOUR], False),
    ],
)
def test_eligibility(pol: ReschedulePolicy, ages: list[int], eligible: bool) -> None:
    fail_at = T0 + 100 * HOUR
    alloc = failed(fail_at=fail_at, events=[(fail_at - a, 5 * S) for a in ages] or None)
    assert next_reschedule_time(alloc, pol)[1] is eligible


def test_disabled_policy_helper() -> None:
    assert not policy(attempts=0, unlimited=False).enabled()
    assert policy(attempts=1, unlimited=False).enabled()
    assert policy(attempts=0, unlimited=True).enabled()


@pytest.mark.parametrize(
    ("finishes", "modify_time", "expected_fail"),
    [
        ([T0], 0, T0),
        ([T0, T0 + 7 * S, T0 + 3 * S], 0, T0 + 7 * S),  # the latest task finish
        ([], T0 + 42 * S, T0 + 42 * S),  # no task finished: ModifyTime
        ([0], T0 + 9 * S, T0 + 9 * S),  # a task state without a finish: ModifyTime
    ],
)
def test_next_reschedule_time_is_fail_time_plus_delay(
    finishes: list[int], modify_time: int, expected_fail: int
) -> None:
    alloc = Allocation(
        id="a1",
        client_status="failed",
        modify_time=modify_time,
        task_states={
            f"t{i}": TaskState(state="dead", failed=True, finished_at=f) for i, f in enumerate(finishes)
        },
    )
    when, ok = next_reschedule_time(alloc, policy("constant", 5 * S))
    assert ok
    assert when == expected_fail + 5 * S


@pytest.mark.parametrize(
    ("update", "why"),
    [
        ({"client_status": "running"}, "not failed"),
        ({"client_status": "complete"}, "completed"),
        ({"desired_status": "stop"}, "already stopped by the server"),
    ],
)
def test_only_failed_running_allocs_are_rescheduled(update: dict[str, Any], why: str) -> None:
    alloc = failed().model_copy(update=update)
    assert next_reschedule_time(alloc, policy())[1] is False, why


def test_no_policy_is_never_eligible() -> None:
    assert next_reschedule_time(failed(), None) == (0, False)


# --------------------------------------------------------------------------------------------
# pure arithmetic: the tracker carried by a replacement
# --------------------------------------------------------------------------------------------


def test_new_tracker_first_event() -> None:
    prev = failed(alloc_id="prev-1", node_id="node-7", fail_at=T0)
    now = T0 + 30 * S
    tr = new_reschedule_tracker(prev, policy("exponential", 30 * S, max_delay=HOUR), now)
    assert tr.events == [
        RescheduleEvent(reschedule_time=now, prev_alloc_id="prev-1", prev_node_id="node-7", delay=30 * S)
    ]


@pytest.mark.parametrize(
    ("ages", "kept_ages"),
    [
        ([2 * HOUR, 30 * MINUTE], [30 * MINUTE]),
        ([HOUR], [HOUR]),  # exactly interval old is kept (Nomad: timeDiff <= interval)
        ([HOUR + 1], []),
        ([3 * HOUR, 2 * HOUR], []),
        ([50 * MINUTE, 40 * MINUTE, 1 * MINUTE], [50 * MINUTE, 40 * MINUTE, 1 * MINUTE]),
    ],
)
def test_new_tracker_keeps_events_inside_interval(ages: list[int], kept_ages: list[int]) -> None:
    now = T0 + 10 * HOUR
    pol = policy(attempts=5, interval=HOUR, unlimited=False)
    prev = failed(fail_at=now - S, events=[(now - a, 5 * S) for a in ages])
    tr = new_reschedule_tracker(prev, pol, now)
    assert [now - e.reschedule_time for e in tr.events[:-1]] == kept_ages
    assert tr.events[-1].reschedule_time == now
    assert tr.events[-1].prev_alloc_id == prev.id


@pytest.mark.parametrize("n_old", [0, 1, 4, 5, 6, 12])
def test_new_tracker_unlimited_keeps_last_five(n_old: int) -> None:
    now = T0 + 100 * HOUR
    pol = policy("constant", 5 * S)
    old = [(T0 + i * HOUR, 5 * S) for i in range(n_old)]  # far outside any interval
    prev = failed(fail_at=now - S, events=old or None)
    tr = new_reschedule_tracker(prev, pol, now)
    kept = [e.reschedule_time for e in tr.events[:-1]]
    assert kept == [t for t, _ in old][-5:]
    assert len(tr.events) == min(n_old, 5) + 1
    last = tr.events[-1]
    assert (last.reschedule_time, last.prev_alloc_id, last.prev_node_id, last.delay) == (
        now,
        "a1",
        "n1",
        5 * S,
    )


def test_new_tracker_does_not_mutate_previous() -> None:
    prev = failed(events=[(T0 - MINUTE, 5 * S)])
    before = prev.model_dump()
    new_reschedule_tracker(prev, policy(), T0 + S)
    assert prev.model_dump() == before


@pytest.mark.parametrize(
    ("pol", "run_for", "expected"),
    [
        # 2 attempts per hour, failing quickly: the third failure is out of attempts.
        (policy(attempts=2, interval=HOUR, unlimited=False), [S, S, S], [True, True, False]),
        # ... failing every 40 min: the oldest event slides out of the window.
        (
            policy(attempts=2, interval=HOUR, unlimited=False),
            [S, 40 * MINUTE, 40 * MINUTE, 40 * MINUTE],
            [True, True, True, True],
        ),
        # the batch default: a single reschedule in 24 h.
        (policy(attempts=1, interval=24 * HOUR, unlimited=False), [S, S], [True, False]),
        (policy(attempts=1, interval=24 * HOUR, unlimited=False), [S, 25 * HOUR], [True, True]),
        # unlimited: never runs out.
        (policy("exponential", 5 * S, max_delay=MINUTE), [S] * 12, [True] * 12),
    ],
)
def test_chain_eligibility(pol: ReschedulePolicy, run_for: list[int], expected: list[bool]) -> None:
    out: list[bool] = []
    start = T0
    tr: RescheduleTracker | None = None
    for i, run in enumerate(run_for):
        fail_at = start + run
        alloc = failed(fail_at=fail_at, alloc_id=f"a{i}")
        alloc.reschedule_tracker = tr
        when, ok = next_reschedule_time(alloc, pol)
        out.append(ok)
        if not ok:
            break
        tr = new_reschedule_tracker(alloc, pol, when)
        start = when
    assert out == expected


# --------------------------------------------------------------------------------------------
# per-type defaults (canonicalize)
# --------------------------------------------------------------------------------------------


def _job(job_type: str, **kw: Any) -> Job:
    tg_kw = {k: kw.pop(k) for k in list(kw) if k in ("reschedule_policy",)}
    return Job(
        id="j",
        type=job_type,
        task_groups=[TaskGroup(name="g", tasks=[Task(name="t", driver="mock")], **tg_kw)],
        **kw,
    )


@pytest.mark.parametrize(
    ("job_type", "expected"),
    [
        (
            "service",
            ReschedulePolicy(
                attempts=0,
                interval=0,
                delay=30 * S,
                delay_function="exponential",
                max_delay=HOUR,
                unlimited=True,
            ),
        ),
        (
            "batch",
            ReschedulePolicy(
                attempts=1,
                interval=24 * HOUR,
                delay=5 * S,
                delay_function="constant",
                max_delay=0,
                unlimited=False,
            ),
        ),
        ("system", None),
        ("sysbatch", None),
    ],
)
def test_default_policy_per_type(job_type: str, expected: ReschedulePolicy | None) -> None:
    tg = canonicalize(_job(job_type)).task_groups[0]
    assert tg.reschedule_policy == expected


@pytest.mark.parametrize(
    ("job_type", "group_policy", "job_policy", "expected"),
    [
        # A partial group block keeps the type's defaults for the rest.
        ("batch", ReschedulePolicy(attempts=3), None, (3, 24 * HOUR, 5 * S, "constant", 0, False)),
        (
            "service",
            ReschedulePolicy(delay_function="fibonacci"),
            None,
            (0, 0, 30 * S, "fibonacci", HOUR, True),
        ),
        # Job level applies to groups; group wins over job.
        ("batch", None, ReschedulePolicy(delay=20 * S), (1, 24 * HOUR, 20 * S, "constant", 0, False)),
        (
            "batch",
            ReschedulePolicy(delay=10 * S),
            ReschedulePolicy(delay=20 * S, attempts=4),
            (4, 24 * HOUR, 10 * S, "constant", 0, False),
        ),
        # Disabling explicitly is kept as such.
        (
            "service",
            ReschedulePolicy(attempts=0, unlimited=False),
            None,
            (0, 0, 30 * S, "exponential", HOUR, False),
        ),
    ],
)
def test_policy_merge(
    job_type: str,
    group_policy: ReschedulePolicy | None,
    job_policy: ReschedulePolicy | None,
    expected: tuple[int, int, int, str, int, bool],
) -> None:
    job = _job(job_type, reschedule_policy=group_policy, reschedule=job_policy)
    p = canonicalize(job).task_groups[0].reschedule_policy
    assert p is not None
    assert (p.attempts, p.interval, p.delay, p.delay_function, p.max_delay, p.unlimited) == expected
