"""The deployment watcher loop: for every active deployment, ask the pure rules
(drover.control.leader.deploymentwatcher) what to do and write it - deployment-watcher evals as
allocs turn healthy, unhealthy allocs of progress-based groups marked for rescheduling, canaries promoted when
the group auto-promotes, deployments failed on an unhealthy alloc or at their progress deadline.
Evals are batched per deployment per pass (Nomad batches them per job over about a second)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from drover.control.leader.deploymentwatcher import rollback, watch_deployment
from drover.model.alloc import DesiredTransition
from drover.model.deployment import DEPLOYMENT_FAILED, DESC_RUNNING, Deployment
from drover.model.evaluation import TRIGGER_DEPLOYMENT_WATCHER, job_eval
from drover.model.events import (
    AllocsClientUpdated,
    AllocsTransitioned,
    DeploymentUpdated,
    DeploymentUpserted,
    EvalsUpserted,
    Event,
    JobRegistered,
    PlanApplied,
)
from drover.model.state import InMemoryState
from drover.runtime.leader import Leader
from drover.runtime.replica import Replica
from drover.runtime.store import NewEvent

log = logging.getLogger("drover.leader")
PASS_EVERY = 0.5
TERMINAL = ("complete", "failed", "lost")


class DeploymentWatcher:
    """Looks again only at deployments whose job's allocs or deployment changed since the last
    pass (told by the replica's listener), or whose progress deadline has come."""

    def __init__(self, state: InMemoryState) -> None:
        self.state = state
        # Per deployment: the index of the last eval this watcher wrote for it; a healthy alloc
        # newer than that needs another. (After a failover one extra eval may be written.)
        self.evaluated: dict[str, int] = {}
        self.deadlines: dict[str, int] = {}
        # Jobs to look at again; None: every job (the first pass).
        self.changed: set[tuple[str, str]] | None = None

    def on_event(self, position: int, event: Event, meta: dict[str, Any]) -> None:
        """Mark the jobs whose deployment may need a decision: health news, allocs that ended
        or were marked, deployment changes. Mere placements need none (they have no health
        yet; the progress deadline they start is read from the deployment)."""
        if self.changed is None:
            return
        if isinstance(event, PlanApplied):
            if (
                event.deployment is not None
                or event.deployment_updates
                or any(a.deployment_id and a.deployment_status is not None for a in event.stopped)
            ):
                self.changed.add((event.namespace, event.job_id))
        elif isinstance(event, AllocsClientUpdated):
            for u in event.updates:
                news = u.deployment_status is not None and u.deployment_status.healthy is not None
                if news or u.client_status in TERMINAL:
                    a = self.state.alloc(u.id)
                    if a is not None and a.deployment_id:
                        self.changed.add((a.namespace, a.job_id))
        elif isinstance(event, AllocsTransitioned):
            for alloc_id in event.transitions:
                a = self.state.alloc(alloc_id)
                if a is not None and a.deployment_id:
                    self.changed.add((a.namespace, a.job_id))
        elif isinstance(event, (DeploymentUpdated, DeploymentUpserted)):
            dep_id = event.deployment_id if isinstance(event, DeploymentUpdated) else event.deployment.id
            d = self.state.deployment(dep_id)
            if d is not None:
                self.changed.add((d.namespace, d.job_id))

    def _due(self, now: int) -> list[Deployment]:
        changed, self.changed = self.changed, set()
        due = []
        for d in self.state.deployments.values():
            if not d.active():
                continue
            # The cutoff of the last look (groups done skipped), else the earliest of any group.
            deadline = self.deadlines.get(d.id, 0)
            if not deadline:
                deadline = min(
                    (st.require_progress_by for st in d.task_groups.values() if st.require_progress_by),
                    default=0,
                )
            if changed is None or (d.namespace, d.job_id) in changed or (deadline and now >= deadline):
                due.append(d)
        return due

    def step(self, now: int) -> tuple[list[Event], list[str]]:
        """The events for one pass over the deployments due a look, and which deployments they
        touch (to remember the eval's index once written)."""
        state = self.state
        events: list[Event] = []
        touched: list[str] = []
        for d in self._due(now):
            job = state.job(d.namespace, d.job_id)
            allocs = state.allocs_by_job(d.namespace, d.job_id)
            res = watch_deployment(d, allocs, job, now, self.evaluated.get(d.id, 0))
            self.deadlines[d.id] = res.deadline
            if not res.acts() or job is None:
                continue
            eval_ = job_eval(job, TRIGGER_DEPLOYMENT_WATCHER, now, deployment_id=d.id)
            touched.append(d.id)
            if res.fail:
                desc = res.description
                if res.rollback:
                    versions = list(self.state.job_versions.get((job.namespace, job.id), {}).values())
                    desc, revert = rollback(job, versions, desc, now)
                    if revert is not None:
                        events.append(JobRegistered(job=revert))
                        eval_ = job_eval(revert, TRIGGER_DEPLOYMENT_WATCHER, now, deployment_id=d.id)
                log.info("deployment %s of %s failed: %s", d.id, d.job_id, desc)
                events.append(
                    DeploymentUpdated(
                        deployment_id=d.id,
                        status=DEPLOYMENT_FAILED,
                        status_description=desc,
                        evals=[eval_],
                        at=now,
                    )
                )
            elif res.promote:
                log.info("deployment %s of %s: canaries healthy, auto-promoting", d.id, d.job_id)
                events.append(
                    DeploymentUpdated(
                        deployment_id=d.id,
                        promote=True,
                        status_description=DESC_RUNNING,
                        evals=[eval_],
                        at=now,
                    )
                )
            elif res.allow_replacements:
                log.info("deployment %s: %d unhealthy allocs to replace", d.id, len(res.allow_replacements))
                events.append(
                    AllocsTransitioned(
                        transitions={a: DesiredTransition(reschedule=True) for a in res.allow_replacements},
                        evals=[eval_],
                    )
                )
            else:
                events.append(EvalsUpserted(evals=[eval_]))
        for memo in (self.evaluated, self.deadlines):
            for dep_id in list(memo):
                known = state.deployments.get(dep_id)
                if known is None or not known.active():
                    del memo[dep_id]
        return events, touched


async def watch_deployments(replica: Replica, leader: Leader) -> None:
    """Run passes until `leader.stop` (set when fenced, too)."""
    watcher = DeploymentWatcher(replica.state)
    replica.listeners.append(watcher.on_event)
    while not leader.stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(leader.stop.wait(), PASS_EVERY)
        events, touched = watcher.step(time.time_ns())
        if not events:
            continue
        items = [
            # A revert is a new version of the job: it must follow the job's last event.
            NewEvent(e, expected_version=await asyncio.to_thread(leader.store.stream_version, e.stream()))
            if isinstance(e, JobRegistered)
            else NewEvent(e)
            for e in events
        ]
        recorded = await leader.try_append(items, "deployment watcher")
        if recorded is None:
            continue
        for dep_id in touched:
            watcher.evaluated[dep_id] = recorded[-1].position
        # The next pass must see these, or it would act on the same allocs again.
        await replica.wait_for(recorded[-1].position)
