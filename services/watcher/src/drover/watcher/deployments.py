"""The deployment watcher loop: for every active deployment, ask the pure core
(drover.scheduler.deploywatch) what to do and write it - deployment-watcher evals as allocs turn
healthy, unhealthy allocs of progress-based groups marked for rescheduling, canaries promoted when
the group auto-promotes, deployments failed on an unhealthy alloc or at their progress deadline.
Evals are batched per deployment per pass (Nomad batches them per job over about a second)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from drover.common.alloc import DesiredTransition
from drover.common.deployment import DEPLOYMENT_FAILED, DESC_RUNNING
from drover.common.evaluation import TRIGGER_DEPLOYMENT_WATCHER, job_eval
from drover.common.events import (
    AllocsTransitioned,
    DeploymentUpdated,
    EvalsUpserted,
    Event,
)
from drover.common.replica import Replica
from drover.common.state import InMemoryState
from drover.common.store import EventStore, FencedError, NewEvent
from drover.scheduler.deploywatch import watch_deployment

log = logging.getLogger("drover.watcher")
PASS_EVERY = 0.5
NO_ROLLBACK_TARGET = " - no stable job version to auto revert to"


class DeploymentWatcher:
    def __init__(self) -> None:
        # Per deployment: the index of the last eval this watcher wrote for it; a healthy alloc
        # newer than that needs another. (After a failover one extra eval may be written.)
        self.evaluated: dict[str, int] = {}

    def step(self, state: InMemoryState, now: int) -> tuple[list[Event], list[str]]:
        """The events for one pass over the active deployments, and which deployments they
        touch (to remember the eval's index once written)."""
        events: list[Event] = []
        touched: list[str] = []
        for d in [x for x in state.deployments.values() if x.active()]:
            job = state.job(d.namespace, d.job_id)
            allocs = state.allocs_by_job(d.namespace, d.job_id)
            res = watch_deployment(d, allocs, job, now, self.evaluated.get(d.id, 0))
            if not res.acts() or job is None:
                continue
            ev = job_eval(job, TRIGGER_DEPLOYMENT_WATCHER, now, deployment_id=d.id)
            touched.append(d.id)
            if res.fail:
                desc = res.description + (NO_ROLLBACK_TARGET if res.rollback else "")
                log.info("deployment %s of %s failed: %s", d.id, d.job_id, desc)
                events.append(
                    DeploymentUpdated(
                        deployment_id=d.id,
                        status=DEPLOYMENT_FAILED,
                        status_description=desc,
                        evals=[ev],
                        at=now,
                    )
                )
            elif res.promote:
                log.info("deployment %s of %s: canaries healthy, auto-promoting", d.id, d.job_id)
                events.append(
                    DeploymentUpdated(
                        deployment_id=d.id, promote=True, status_description=DESC_RUNNING, evals=[ev], at=now
                    )
                )
            elif res.allow_replacements:
                log.info("deployment %s: %d unhealthy allocs to replace", d.id, len(res.allow_replacements))
                events.append(
                    AllocsTransitioned(
                        transitions={a: DesiredTransition(reschedule=True) for a in res.allow_replacements},
                        evals=[ev],
                    )
                )
            else:
                events.append(EvalsUpserted(evals=[ev]))
        for dep_id in list(self.evaluated):
            known = state.deployments.get(dep_id)
            if known is None or not known.active():
                del self.evaluated[dep_id]
        return events, touched


async def watch_deployments(
    replica: Replica, store: EventStore, lease: tuple[str, int], stop: asyncio.Event
) -> None:
    """Run passes until stopped; a fenced append (a newer leader) stops the watcher."""
    watcher = DeploymentWatcher()
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), PASS_EVERY)
        events, touched = watcher.step(replica.state, time.time_ns())
        if not events:
            continue
        try:
            recorded = await asyncio.to_thread(store.append, [NewEvent(e) for e in events], fence=lease)
        except FencedError:
            log.error("fenced: a newer watcher leads; stepping down")
            stop.set()
            return
        except Exception as e:
            log.warning("deployment watcher: %s; retrying", e)
            continue
        for dep_id in touched:
            watcher.evaluated[dep_id] = recorded[-1].position
        # The next pass must see these, or it would act on the same allocs again.
        await replica.wait_for(recorded[-1].position)
