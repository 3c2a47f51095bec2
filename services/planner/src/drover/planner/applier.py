"""Verify and commit plans, one at a time, against the newest state.

Each plan is checked node by node (`evaluate_plan`); what fits is committed in one append with
the leader's lease epoch, so a deposed leader's commit is refused by the database. A plan for an
eval that is already finished is refused whole: that is what makes a redelivered eval harmless.
Commits stay strictly serial; only the verification of the next plan overlaps the commit of
the previous one, against the state with that plan applied optimistically.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from drover.common.events import EvalsUpserted, Event, PlanApplied
from drover.common.replica import Replica
from drover.common.store import EventStore, FencedError, NewEvent, RecordedEvent
from drover.common.telemetry import inject
from drover.scheduler.planapply import OptimisticState, evaluate_plan, plan_applied_event
from drover.scheduler.state import InMemoryState
from drover.scheduler.wire import PlanRequest, PlanResponse

log = logging.getLogger("drover.planner")

LEASE = "plan-applier"
# Allocs per PlanApplied event: keeps every relayed message well under NATS's payload limit.
ALLOCS_PER_EVENT = 200


def chunk(ev: PlanApplied) -> list[PlanApplied]:
    """Split a large committed plan into several events of at most ALLOCS_PER_EVENT allocs."""
    total = len(ev.allocs) + len(ev.stopped) + len(ev.preempted)
    if total <= ALLOCS_PER_EVENT:
        return [ev]
    out: list[PlanApplied] = []
    stopped, preempted, allocs = list(ev.stopped), list(ev.preempted), list(ev.allocs)
    first = True
    while stopped or preempted or allocs:
        budget = ALLOCS_PER_EVENT
        part_s, stopped = stopped[:budget], stopped[budget:]
        budget -= len(part_s)
        part_p, preempted = preempted[:budget], preempted[budget:]
        budget -= len(part_p)
        part_a, allocs = allocs[:budget], allocs[budget:]
        out.append(
            ev.model_copy(
                update={
                    "stopped": part_s,
                    "preempted": part_p,
                    "allocs": part_a,
                    # Deployment changes go with the first chunk only.
                    "deployment": ev.deployment if first else None,
                    "deployment_updates": ev.deployment_updates if first else [],
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
class Prepared:
    """A verified plan: the events to append, or the answer when there is nothing to append."""

    req: PlanRequest
    events: list[Event] = field(default_factory=list)
    rejected_nodes: list[str] = field(default_factory=list)
    placed: int = 0
    answer: PlanResponse | None = None
    started: float = 0.0
    verified: float = 0.0

    @property
    def size(self) -> int:
        plan = self.req.plan
        return sum(len(v) for v in plan.node_allocation.values()) + sum(
            len(v) for v in plan.node_update.values()
        )


class PlanApplier:
    """Verifies and commits plans. `prepare` verifies a plan against the replica, or - while the
    previous plan is still being appended - against the replica with that plan applied
    optimistically (`OptimisticState`); `append` commits; `finish` brings the replica up to the
    commit and answers. The service overlaps one plan's append with the next one's verification
    and the previous one's finish."""

    def __init__(self, store: EventStore, replica: Replica, epoch: int) -> None:
        self.store = store
        self.replica = replica
        self.epoch = epoch
        self.fenced = False

    async def prepare(self, req: PlanRequest, pending: Prepared | None = None) -> Prepared:
        plan = req.plan
        t0 = time.perf_counter()
        await self.replica.wait_for(plan.snapshot_index)
        state: InMemoryState | OptimisticState = self.replica.state
        if pending is not None and pending.events:
            state = OptimisticState(self.replica.state, pending.events)
        current = state.eval(plan.eval_id)
        if current is not None and current.terminal_status():
            answer = PlanResponse(full=False, index=state.index, error="eval already processed")
            return Prepared(req, answer=answer, started=t0)
        result = evaluate_plan(state, plan)
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
            events.extend(chunk(plan_applied_event(result, now)))
        if full and req.evals:
            stamped = [
                e.model_copy(update={"modify_time": now, "create_time": e.create_time or now})
                for e in req.evals
            ]
            events.append(EvalsUpserted(evals=stamped))
        placed = sum(len(v) for v in result.node_allocation.values())
        prepared = Prepared(
            req, events, result.rejected_nodes, placed, started=t0, verified=time.perf_counter()
        )
        if not events:
            prepared.answer = PlanResponse(full=full, index=state.index, rejected_nodes=result.rejected_nodes)
        return prepared

    async def append(self, prepared: Prepared) -> list[RecordedEvent]:
        meta = inject()
        try:
            # Owned: the events are only reduced again, into this applier's own replica.
            return await asyncio.to_thread(
                self.store.append,
                [NewEvent(e, metadata=meta) for e in prepared.events],
                fence=(LEASE, self.epoch),
                owned=True,
            )
        except FencedError:
            self.fenced = True
            raise

    async def finish(self, prepared: Prepared, recorded: list[RecordedEvent]) -> PlanResponse:
        t0 = time.perf_counter()
        await self.replica.apply_recorded([(r.position, r.event) for r in recorded])
        log.debug(
            "plan for %s: verified in %.0f ms, committed %.0f ms later, applied in %.0f ms",
            prepared.req.plan.eval_id,
            (prepared.verified - prepared.started) * 1000,
            (t0 - prepared.verified) * 1000,
            (time.perf_counter() - t0) * 1000,
        )
        return PlanResponse(
            full=not prepared.rejected_nodes,
            index=recorded[-1].position,
            rejected_nodes=prepared.rejected_nodes,
            placed=prepared.placed,
        )
