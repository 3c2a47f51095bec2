"""Reschedule arithmetic (Nomad's reschedule block): delays, eligibility within the interval, the tracker.

All times are Unix ns and are passed in; nothing here reads a clock.
"""

from __future__ import annotations

from drover.model import Allocation, RescheduleEvent, ReschedulePolicy, RescheduleTracker
from drover.model.alloc import ALLOC_CLIENT_FAILED, ALLOC_DESIRED_STOP
from drover.model.durations import SECOND

# A failed alloc due within this window is rescheduled now rather than by a follow-up eval
# (Nomad's rescheduleWindowSize).
RESCHEDULE_WINDOW = 1 * SECOND
# Failures due within this window of each other share one follow-up eval
# (Nomad's batchedFailedAllocWindowSize).
BATCHED_FAILED_ALLOC_WINDOW = 5 * SECOND
# With unlimited rescheduling only the most recent events are kept on the tracker.
MAX_PAST_RESCHEDULE_EVENTS = 5


def _events(alloc: Allocation) -> list[RescheduleEvent]:
    return alloc.reschedule_tracker.events if alloc.reschedule_tracker is not None else []


def next_delay(alloc: Allocation, policy: ReschedulePolicy | None) -> int:
    """The delay before the next reschedule of `alloc` (a failed alloc), per delay_function."""
    if policy is None:
        return 0
    delay = policy.delay
    events = _events(alloc)
    if not events:
        return delay
    fn = policy.delay_function
    if fn == "exponential":
        delay = events[-1].delay * 2
    elif fn == "fibonacci":
        if len(events) >= 2:
            n1, n2 = events[-1].delay, events[-2].delay
            # A series that hit max_delay and was reset starts over from delay.
            delay = n1 if (n2 == policy.max_delay and n1 == policy.delay) else n1 + n2
    else:
        return delay
    if policy.max_delay > 0 and delay > policy.max_delay:
        delay = policy.max_delay
        # Once capped: if the alloc ran longer than the cap since its last reschedule,
        # start the series again.
        if alloc.last_event_time() - events[-1].reschedule_time > delay:
            delay = policy.delay
    return delay


def attempts_in_interval(tracker: RescheduleTracker | None, policy: ReschedulePolicy, fail_time: int) -> int:
    """Reschedules made within the trailing interval before `fail_time`."""
    if tracker is None or policy.attempts == 0:
        return 0
    return sum(1 for event in tracker.events if fail_time - event.reschedule_time < policy.interval)


def next_reschedule_time(alloc: Allocation, policy: ReschedulePolicy | None) -> tuple[int, bool]:
    """(when the failed alloc may be rescheduled, whether it may be at all)."""
    fail_time = alloc.last_event_time()
    if (
        policy is None
        or alloc.desired_status == ALLOC_DESIRED_STOP
        or alloc.client_status != ALLOC_CLIENT_FAILED
        or fail_time == 0
    ):
        return 0, False
    return next_reschedule_time_from(alloc, policy, fail_time)


def next_reschedule_time_from(
    alloc: Allocation, policy: ReschedulePolicy, fail_time: int
) -> tuple[int, bool]:
    """As `next_reschedule_time`, counting from an explicit failure (or disconnect) time."""
    delay = next_delay(alloc, policy)
    events = _events(alloc)
    eligible = policy.unlimited or (policy.attempts > 0 and not events)
    if policy.attempts > 0 and events and not policy.unlimited:
        used = attempts_in_interval(alloc.reschedule_tracker, policy, fail_time)
        eligible = used < policy.attempts and delay < policy.interval
    return fail_time + delay, eligible


def new_reschedule_tracker(prev: Allocation, policy: ReschedulePolicy | None, now: int) -> RescheduleTracker:
    """The tracker for the replacement of `prev`: past events still inside the interval (or the
    last few when unlimited), plus this reschedule."""
    kept: list[RescheduleEvent] = []
    old = _events(prev)
    if old and policy is not None:
        if policy.attempts > 0 and not policy.unlimited:
            kept = [
                event.model_copy()
                for event in old
                if policy.interval > 0 and now - event.reschedule_time <= policy.interval
            ]
        else:
            kept = [event.model_copy() for event in old[-MAX_PAST_RESCHEDULE_EVENTS:]]
    kept.append(
        RescheduleEvent(
            reschedule_time=now,
            prev_alloc_id=prev.id,
            prev_node_id=prev.node_id,
            delay=next_delay(prev, policy),
        )
    )
    return RescheduleTracker(events=kept)
