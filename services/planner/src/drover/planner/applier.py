"""Verify and commit plans, one at a time, against the newest state.

Each plan is checked node by node (`evaluate_plan`); what fits is committed in one append with
the leader's lease epoch, so a deposed leader's commit is refused by the database. A plan for an
eval that is already finished is refused whole: that is what makes a redelivered eval harmless.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from drover.common.events import EvalsUpserted, Event, PlanApplied
from drover.common.replica import Replica
from drover.common.store import EventStore, FencedError, NewEvent
from drover.common.telemetry import inject
from drover.scheduler.planapply import evaluate_plan, plan_applied_event
from drover.scheduler.wire import PlanRequest, PlanResponse

log = logging.getLogger("drover.planner")

LEASE = "plan-applier"
# How the service answers a plan's worker.
Answer = Callable[[PlanResponse], Awaitable[None]]
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


class PlanApplier:
    def __init__(self, store: EventStore, replica: Replica, epoch: int) -> None:
        self.store = store
        self.replica = replica
        self.epoch = epoch
        self.fenced = False

    async def apply(self, req: PlanRequest, answer: Answer) -> None:
        """Verify and commit one plan and `answer` it; then bring the replica up to the commit
        (before the next plan: the answer needs only the index, so it does not wait for that)."""
        plan = req.plan
        t0 = time.perf_counter()
        await self.replica.wait_for(plan.snapshot_index)
        t1 = time.perf_counter()
        state = self.replica.state
        current = state.eval(plan.eval_id)
        if current is not None and current.terminal_status():
            await answer(PlanResponse(full=False, index=state.index, error="eval already processed"))
            return
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
        if not events:
            await answer(PlanResponse(full=full, index=state.index, rejected_nodes=result.rejected_nodes))
            return
        t2 = time.perf_counter()
        try:
            meta = inject()
            # Owned: the events are only reduced again, into this applier's own replica.
            recorded = await asyncio.to_thread(
                self.store.append,
                [NewEvent(e, metadata=meta) for e in events],
                fence=(LEASE, self.epoch),
                owned=True,
            )
        except FencedError:
            self.fenced = True
            raise
        t3 = time.perf_counter()
        placed = sum(len(v) for v in result.node_allocation.values())
        await answer(
            PlanResponse(
                full=full, index=recorded[-1].position, rejected_nodes=result.rejected_nodes, placed=placed
            )
        )
        t4 = time.perf_counter()
        await self.replica.apply_recorded([(r.position, r.event) for r in recorded])
        log.debug(
            "plan for %s: waited %.0f ms for the replica, evaluated in %.0f ms, appended in %.0f ms, "
            "applied in %.0f ms",
            plan.eval_id,
            (t1 - t0) * 1000,
            (t2 - t1) * 1000,
            (t3 - t2) * 1000,
            (time.perf_counter() - t4) * 1000,
        )
