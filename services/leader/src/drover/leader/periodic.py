"""The periodic dispatcher loop: launch periodic jobs' children when they fall due
(drover.control.leader.periodic decides which), each launch in an append of its own.

It sleeps until the next launch of any periodic job, and wakes early when a periodic job is
registered, changed or stopped (told by the replica's listener). A launch expects its child's
job stream to be new, so a launch made already - by a leader deposed since, or by a force in the
same second - is refused by the log and taken as done: no launch is ever made twice."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from drover.control.leader.periodic import JobKey, LaunchChange, dispatch_step
from drover.model.events import Event, JobDeregistered, JobRegistered
from drover.model.periodic import SECOND
from drover.model.state import InMemoryState
from drover.runtime.leader import Leader
from drover.runtime.replica import Replica
from drover.runtime.store import ConcurrencyError

log = logging.getLogger("drover.leader")
# The longest sleep between passes (a safety net for a wall clock set back), and the wait after
# an append that failed for another reason than a launch made already (Postgres away).
MAX_SLEEP = 60.0
RETRY = 1.0


class PeriodicDispatcher:
    """What the dispatcher remembers between passes: per job, the last launch time dealt with
    (launched, found launched, or passed over for ProhibitOverlap); and the jobs it tracks."""

    def __init__(self, state: InMemoryState) -> None:
        self.state = state
        self.passed: dict[JobKey, int] = {}
        self.tracked: set[JobKey] = set()
        self.wake = asyncio.Event()

    def on_event(self, position: int, event: Event, meta: dict[str, Any]) -> None:
        """Wake for a periodic job registered, or a tracked job changed or stopped; a child's
        registration (a launch, a force) is read on the next pass without one."""
        if isinstance(event, JobRegistered):
            key = (event.job.namespace, event.job.id)
            if event.job.periodic is not None or key in self.tracked:
                self.wake.set()
        elif isinstance(event, JobDeregistered) and (event.namespace, event.job_id) in self.tracked:
            self.wake.set()

    def step(self, now: int) -> tuple[list[LaunchChange], int | None]:
        """The launches due at `now`, and when the next one falls due."""
        step = dispatch_step(self.state, self.passed, now)
        self.tracked = set(step.tracked)
        self.passed = {k: v for k, v in self.passed.items() if k in self.tracked}
        for (namespace, job_id), at in step.skipped.items():
            log.info("periodic job %s: launch %d passed over, a child still runs", job_id, at // SECOND)
            self.passed[(namespace, job_id)] = at
        return step.launches, step.wake_at


async def dispatch_periodic(replica: Replica, leader: Leader) -> None:
    """Launch periodic jobs until `leader.stop` (set when fenced, too)."""
    dispatcher = PeriodicDispatcher(replica.state)
    replica.listeners.append(dispatcher.on_event)
    while not leader.stop.is_set():
        dispatcher.wake.clear()  # before the pass: a registration heard during it wakes the next
        now = time.time_ns()
        launches, wake_at = dispatcher.step(now)
        failed = False
        for change in launches:
            done = await _launch(replica, leader, change)
            if done:
                assert change.job is not None
                dispatcher.passed[(change.job.namespace, change.job.parent_id)] = change.at
            failed = failed or not done
        sleep = MAX_SLEEP if wake_at is None else (wake_at - time.time_ns()) / SECOND
        sleep = min(sleep, RETRY) if failed else sleep
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(_either(dispatcher.wake, leader.stop), max(0.01, min(sleep, MAX_SLEEP)))


async def _launch(replica: Replica, leader: Leader, change: LaunchChange) -> bool:
    """Append one launch under the lease; whether it is done (appended, or made already)."""
    assert change.job is not None
    child = change.job.id
    try:
        recorded = await leader.append(change.events)
    except ConcurrencyError:
        log.info("periodic job %s: %s was launched already", change.job.parent_id, child)
        return True
    except Exception as e:
        log.warning("periodic launch of %s: %s; retrying", child, e)
        return False
    if recorded is None:  # fenced
        return False
    log.info("periodic job %s: launched %s (eval %s)", change.job.parent_id, child, change.eval_ids[0])
    # The next pass must see the child (ProhibitOverlap reads it).
    await replica.wait_for(recorded[-1].position)
    return True


async def _either(a: asyncio.Event, b: asyncio.Event) -> None:
    """Return when `a` or `b` is set."""
    waits = [asyncio.create_task(a.wait()), asyncio.create_task(b.wait())]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
