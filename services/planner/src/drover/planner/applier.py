"""Verify and commit plans, one at a time, against the newest state.

Each plan is checked node by node (`evaluate_plan`); what fits is committed in one append with
the leader's lease epoch, so a deposed leader's commit is refused by the database. A plan for an
eval that is already finished is refused whole: that is what makes a redelivered eval harmless.
Each job whose allocs a commit preempts gets an eval in the same append, as Nomad's applier does.
A large plan that only adds may commit in the background while smaller plans of other jobs are
verified against it (`PendingPlacements`) and committed (the server decides: drover.planner.server).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from drover.model.events import EvalsUpserted, Event, PlanApplied
from drover.runtime.leader import Leader
from drover.runtime.metrics import Metrics
from drover.runtime.replica import Replica
from drover.runtime.store import NewEvent, RecordedEvent
from drover.runtime.telemetry import inject
from drover.scheduler.planapply import (
    PendingPlacements,
    adds_only,
    evaluate_plan,
    plan_applied_event,
    preemption_evals,
)
from drover.scheduler.state import StateSnapshot
from drover.scheduler.wire import PlanRequest, PlanResponse

log = logging.getLogger("drover.planner")

LEASE = "plan-applier"
# How the service answers a plan's worker.
Answer = Callable[[PlanResponse], Awaitable[None]]
# Plans of at least this many allocs that only add may commit in the background; smaller plans
# of other jobs may overtake them.
BACKGROUND_FROM = 100
# Allocs per PlanApplied event: keeps every relayed message well under NATS's payload limit.
ALLOCS_PER_EVENT = 200


def _new_id() -> str:
    return str(uuid.uuid4())


def chunk(event: PlanApplied) -> list[PlanApplied]:
    """Split a large committed plan into several events of at most ALLOCS_PER_EVENT allocs."""
    total = len(event.allocs) + len(event.stopped) + len(event.preempted)
    if total <= ALLOCS_PER_EVENT:
        return [event]
    out: list[PlanApplied] = []
    stopped, preempted, allocs = list(event.stopped), list(event.preempted), list(event.allocs)
    first = True
    while stopped or preempted or allocs:
        budget = ALLOCS_PER_EVENT
        part_s, stopped = stopped[:budget], stopped[budget:]
        budget -= len(part_s)
        part_p, preempted = preempted[:budget], preempted[budget:]
        budget -= len(part_p)
        part_a, allocs = allocs[:budget], allocs[budget:]
        out.append(
            event.model_copy(
                update={
                    "stopped": part_s,
                    "preempted": part_p,
                    "allocs": part_a,
                    # Deployment changes go with the first chunk only.
                    "deployment": event.deployment if first else None,
                    "deployment_updates": event.deployment_updates if first else [],
                }
            )
        )
        first = False
    return out


def plan_size(req: PlanRequest) -> int:
    """Allocs a plan places or stops."""
    plan = req.plan
    return sum(len(v) for v in plan.node_allocation.values()) + sum(len(v) for v in plan.node_update.values())


@dataclass
class Verified:
    """A verified plan: the events to commit, or the answer when there is nothing to commit.
    `pending` is set for a plan of BACKGROUND_FROM allocs or more that only adds (`adds_only`):
    it may commit in the background, plans of other jobs verified against it meanwhile."""

    req: PlanRequest
    events: list[Event] = field(default_factory=list)
    rejected_nodes: list[str] = field(default_factory=list)
    placed: int = 0
    answer: PlanResponse | None = None
    pending: PendingPlacements | None = None
    # Set by the committing thread as soon as the append returns (before the awaiting task
    # resumes): a plan committed after this one can tell whether this one is in the log.
    returned: threading.Event = field(default_factory=threading.Event)
    queued: float = 0.0
    started: float = 0.0
    verified: float = 0.0


class PlanApplier:
    """Verifies (`verify`), commits (`commit`) and answers (`finish`) plans; the service runs
    them one at a time, except that a large plan that only adds may commit in the background
    while smaller plans of other jobs are verified against it and committed."""

    def __init__(self, leader: Leader, replica: Replica, metrics: Metrics | None = None) -> None:
        self.leader = leader
        self.replica = replica
        self.metrics = metrics or Metrics("planner")
        # Looked up once: recorded for every plan.
        self._queued = self.metrics.timing("plan.queued")
        self._evaluate = self.metrics.timing("plan.evaluate")
        self._apply = self.metrics.timing("plan.apply")

    async def verify(
        self, req: PlanRequest, pending: PendingPlacements | None = None, arrived: float = 0.0
    ) -> Verified:
        """Check the plan node by node against the newest state: the replica, with the
        placements of the plan committing in the background (`pending`) added."""
        plan = req.plan
        t0 = time.monotonic()
        queued = t0 - arrived if arrived else 0.0
        await self.replica.wait_for(plan.snapshot_index)
        state: StateSnapshot = self.replica.state
        if pending is not None:
            pending.base = state
            state = pending
        current = self.replica.state.eval(plan.eval_id)
        if current is not None and current.terminal_status():
            answer = PlanResponse(full=False, index=state.index, error="eval already processed")
            return Verified(req, answer=answer, started=t0, queued=queued)
        result = evaluate_plan(state, plan)
        if result.stale:
            # Rare, and a worker whose plans keep being refused fails its eval for a minute.
            log.info(
                "plan for eval %s of %s refused whole: a plan of the job committed after its "
                "snapshot %d (now at %d)",
                plan.eval_id,
                plan.job.id if plan.job is not None else "",
                plan.snapshot_index,
                state.index,
            )
        full = not result.rejected_nodes
        now = time.time_ns()
        events: list[Event] = []
        if (
            result.node_allocation
            or result.node_update
            or result.node_preemptions
            or result.deployment
            or result.deployment_updates
        ):
            applied = plan_applied_event(result, now)
            applied.metrics_json = req.metrics_json  # written as they came, never decoded
            events.extend(chunk(applied))
        evals = preemption_evals(state, result, now, _new_id)
        if full and req.evals:
            stamped = [
                e.model_copy(update={"modify_time": now, "create_time": e.create_time or now})
                for e in req.evals
            ]
            evals = stamped + evals
        if evals:
            events.append(EvalsUpserted(evals=evals))
        placed = sum(len(v) for v in result.node_allocation.values())
        out = Verified(
            req, events, result.rejected_nodes, placed, started=t0, verified=time.monotonic(), queued=queued
        )
        if not events:
            out.answer = PlanResponse(full=full, index=state.index, rejected_nodes=result.rejected_nodes)
        elif pending is None and plan_size(req) >= BACKGROUND_FROM and adds_only(state, result):
            out.pending = PendingPlacements(state, result)
        return out

    async def commit(self, verified: Verified) -> list[RecordedEvent] | None:
        """Append the plan's events in one transaction, fenced by the leader's epoch; None if
        fenced (this planner steps down and the plan is not answered: its worker asks again)."""
        meta = inject()
        items = [NewEvent(e, metadata=meta) for e in verified.events]
        # Owned: the events are only reduced again, into this applier's own replica.
        return await self.leader.append(items, owned=True, returned=verified.returned)

    async def finish(
        self,
        verified: Verified,
        recorded: list[RecordedEvent],
        answer: Answer,
        before_apply: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Answer a committed plan, then bring the replica up to the commit (the answer needs
        only the index; the replica must have the plan before the next one is verified).
        `before_apply` runs in between (the service applies a plan committed before it)."""
        t0 = time.monotonic()
        self._queued.observe(verified.queued)
        self._evaluate.observe(verified.verified - verified.started)
        # Nomad's plan.apply: from the start of verification until the plan is in the log.
        self._apply.observe(t0 - verified.started)
        self.metrics.count("plan.placements", verified.placed)
        await answer(
            PlanResponse(
                full=not verified.rejected_nodes,
                index=recorded[-1].position,
                rejected_nodes=verified.rejected_nodes,
                placed=verified.placed,
            )
        )
        if before_apply is not None:
            await before_apply()
        await self.replica.apply_recorded([(r.position, r.event) for r in recorded])
        log.debug(
            "plan for %s (%d placed, %d nodes refused): queued %.0f ms, verified in %.0f ms, committed "
            "%.0f ms later, applied in %.0f ms",
            verified.req.plan.eval_id,
            verified.placed,
            len(verified.rejected_nodes),
            verified.queued * 1000,
            (verified.verified - verified.started) * 1000,
            (t0 - verified.verified) * 1000,
            (time.monotonic() - t0) * 1000,
        )
