"""The job restart watcher loop: for every running job restart, ask the pure rules
(drover.control.leader.jobrestartwatcher) what to do and write it - the next batch's signal
(with its record, in one append), the batch in flight done, a pause or failure on an error, the end.
Restarts that have ended are the garbage collector's (drover.gc).

Exactly once: a batch's signal and its record are one event, each alloc's request ID is derived
from the restart and the alloc, and the reducer applies a batch's signal once; after a failover
the new leader reads the batch from the log and signals it no more."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from drover.control.leader.jobrestartwatcher import watch_job_restart
from drover.model.events import (
    AllocsClientUpdated,
    EvalsUpserted,
    Event,
    JobRestartDeleted,
    JobRestartSignaled,
    JobRestartStarted,
    JobRestartUpdated,
    PlanApplied,
)
from drover.model.state import InMemoryState
from drover.runtime.leader import Leader
from drover.runtime.replica import Replica
from drover.runtime.store import NewEvent

log = logging.getLogger("drover.leader")
# A pass at least this often (deadlines: BatchWait, health), and at most once per MIN_GAP while
# changes keep coming: a batch's allocs report one by one, and each pass looks at the job's allocs.
PASS_EVERY = 0.25
MIN_GAP = 0.05
JobKey = tuple[str, str]


class JobRestartWatcher:
    """Looks again at a restart when its job's allocs or the restart changed (told by the
    replica's listener), or when its deadline (BatchWait, a health deadline) has come."""

    def __init__(self, state: InMemoryState) -> None:
        self.state = state
        self.deadlines: dict[str, int] = {}
        # Jobs to look at again; None: every job (the first pass).
        self.changed: set[JobKey] | None = None
        # Set when a job with a restart that has not ended changed: the loop passes at once.
        self.wake = asyncio.Event()

    def on_event(self, position: int, event: Event, meta: dict[str, Any]) -> None:
        if self.changed is None:
            return
        jobs: set[JobKey] = set()
        if isinstance(event, (JobRestartSignaled, JobRestartUpdated, JobRestartDeleted)):
            jobs.add((event.namespace, event.job_id))
        elif isinstance(event, JobRestartStarted):
            jobs.add((event.restart.namespace, event.restart.job_id))
        elif isinstance(event, PlanApplied):
            jobs.add((event.namespace, event.job_id))
        elif isinstance(event, AllocsClientUpdated):
            for u in event.updates:
                a = self.state.alloc(u.id)
                if a is not None:
                    jobs.add((a.namespace, a.job_id))
        self.changed |= jobs
        if any(not r.terminal() for ns, job_id in jobs for r in self.state.job_restarts_of(ns, job_id)):
            self.wake.set()

    def step(self, now: int) -> list[Event]:
        """The events of one pass over the restarts due a look."""
        changed, self.changed = self.changed, set()
        events: list[Event] = []
        evals = []
        for r in list(self.state.job_restarts.values()):
            if r.terminal():
                self.deadlines.pop(r.id, None)
                continue
            deadline = self.deadlines.get(r.id, 0)
            if (
                changed is not None
                and (r.namespace, r.job_id) not in changed
                and not (deadline and now >= deadline)
            ):
                continue
            job = self.state.job(r.namespace, r.job_id)
            step = watch_job_restart(r, job, self.state.allocs_by_job(r.namespace, r.job_id), now)
            self.deadlines[r.id] = step.deadline
            for event in step.events:
                log.info("restart %s of %s: %s", r.id, r.job_id, _describe(event))
            events.extend(step.events)
            evals.extend(step.evals)
        if evals:
            events.append(EvalsUpserted(evals=evals))
        return events


def _describe(event: Event) -> str:
    if isinstance(event, JobRestartSignaled):
        return f"batch {event.batch_number} signalled ({len(event.alloc_ids())} allocs)"
    if isinstance(event, JobRestartUpdated):
        return event.status or "batch done"
    return event.type


async def watch_job_restarts(replica: Replica, leader: Leader) -> None:
    """Run passes until `leader.stop` (set when fenced, too)."""
    watcher = JobRestartWatcher(replica.state)
    replica.listeners.append(watcher.on_event)
    last = 0.0
    while not leader.stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watcher.wake.wait(), PASS_EVERY)
        gap = MIN_GAP - (time.monotonic() - last)
        if gap > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(leader.stop.wait(), gap)
        watcher.wake.clear()  # before the pass: a change heard during it wakes the next one
        last = time.monotonic()
        events = watcher.step(time.time_ns())
        if not events:
            continue
        recorded = await leader.try_append([NewEvent(e) for e in events], "job restart watcher")
        if recorded is None:
            watcher.changed = None  # look at every restart again on the next pass
            continue
        # The next pass must see these, or it would signal the same batch again.
        await replica.wait_for(recorded[-1].position)
