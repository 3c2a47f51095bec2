"""The plan server's order, without NATS or Postgres: a large plan that only adds commits in the
background while small plans of other jobs go ahead; a plan of the same job waits for it; a plan
that went ahead and was refused nodes is answered once the background plan is in, with its
index."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest

from drover.model import Allocation, Job
from drover.model.events import EvalsUpserted
from drover.model.state import InMemoryState
from drover.planner.applier import BACKGROUND_FROM, Answer, Verified, plan_size
from drover.planner.planqueue import PlanQueue
from drover.planner.server import PlanServer
from drover.runtime.store import RecordedEvent
from drover.scheduler.plan import Plan
from drover.scheduler.planapply import PendingPlacements
from drover.scheduler.wire import PlanRequest, PlanResponse


@dataclass
class Reply:
    """A worker waiting for its plan's answer."""

    eval_id: str
    headers: dict[str, str] | None = None


class FakeApplier:
    """`PlanApplier`'s methods over a counter for a log: a plan of BACKGROUND_FROM allocs or
    more may commit in the background (it only adds); plans in `refuse` are refused a node;
    a commit waits while its eval is in `held`."""

    def __init__(self) -> None:
        self.position = 0
        self.refuse: set[str] = set()
        self.held: dict[str, asyncio.Event] = {}
        self.committing: set[str] = set()
        self.committed: list[str] = []

    async def verify(
        self, req: PlanRequest, pending: PendingPlacements | None = None, arrived: float = 0.0
    ) -> Verified:
        plan = req.plan
        rejected = ["n-shared"] if plan.eval_id in self.refuse else []
        out = Verified(req, [EvalsUpserted(evals=[])], rejected, placed=plan_size(req))
        if pending is None and plan_size(req) >= BACKGROUND_FROM:
            out.pending = PendingPlacements.of_plan(InMemoryState(), plan)
        return out

    async def commit(self, verified: Verified) -> list[RecordedEvent]:
        eval_id = verified.req.plan.eval_id
        self.committing.add(eval_id)
        held = self.held.get(eval_id)
        if held is not None:
            await held.wait()
        self.position += 1
        self.committed.append(eval_id)
        verified.returned.set()
        return [RecordedEvent(self.position, f"plan:{eval_id}", 1, verified.events[0], {})]

    async def finish(
        self,
        verified: Verified,
        recorded: list[RecordedEvent],
        answer: Answer,
        before_apply: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
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


def request(eval_id: str, job_id: str, allocs: int) -> PlanRequest:
    plan = Plan(eval_id=eval_id, priority=50, job=Job(id=job_id))
    for i in range(allocs):
        plan.append_alloc(Allocation(id=f"{eval_id}-{i}", job_id=job_id, node_id=f"n{i % 10}"))
    return PlanRequest(plan=plan)


@dataclass
class Served:
    applier: FakeApplier
    queue: PlanQueue[Reply]
    answers: dict[str, PlanResponse]
    order: list[str]

    def submit(self, eval_id: str, job_id: str, allocs: int) -> None:
        self.queue.put(request(eval_id, job_id, allocs), Reply(eval_id))

    async def background(self, eval_id: str, job_id: str) -> None:
        """Submit a large plan and wait until its commit is under way (and held)."""
        self.applier.held[eval_id] = asyncio.Event()
        self.submit(eval_id, job_id, BACKGROUND_FROM)
        async with asyncio.timeout(5):
            while eval_id not in self.applier.committing:
                await asyncio.sleep(0.001)

    async def answered(self, eval_id: str) -> PlanResponse:
        async with asyncio.timeout(5):
            while eval_id not in self.answers:
                await asyncio.sleep(0.001)
        return self.answers[eval_id]


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    """A plan server on a fake applier, running until the test ends."""
    applier = FakeApplier()
    answers: dict[str, PlanResponse] = {}
    order: list[str] = []

    async def respond(reply: Reply, resp: PlanResponse) -> None:
        answers[reply.eval_id] = resp
        order.append(reply.eval_id)

    server: PlanServer[Reply] = PlanServer(applier, respond)
    queue: PlanQueue[Reply] = PlanQueue()
    stop = asyncio.Event()
    task = asyncio.create_task(server.run(queue, stop))
    try:
        yield Served(applier, queue, answers, order)
    finally:
        for held in applier.held.values():
            held.set()
        stop.set()
        await task


async def test_a_small_plan_of_another_job_overtakes_a_background_commit(served: Served) -> None:
    await served.background("big", "a")
    served.submit("small", "b", 5)
    assert (await served.answered("small")).index == 1
    assert "big" not in served.answers  # still committing
    served.applier.held["big"].set()
    assert (await served.answered("big")).index == 2
    assert served.order == ["small", "big"]
    assert served.applier.committed == ["small", "big"]


async def test_a_plan_of_the_same_job_waits_for_the_background_commit(served: Served) -> None:
    await served.background("big", "a")
    served.submit("same", "a", 5)  # first in order: as small, and queued earlier
    served.submit("other", "b", 5)
    await served.answered("other")
    assert served.applier.committed == ["other"]  # "same" was passed over
    served.applier.held["big"].set()
    assert (await served.answered("same")).index == 3
    assert served.order == ["other", "big", "same"]


async def test_a_plan_that_went_ahead_and_was_refused_nodes_is_answered_after_the_background_plan(
    served: Served,
) -> None:
    served.applier.refuse.add("refused")
    await served.background("big", "a")
    served.submit("refused", "b", 5)
    served.submit("after", "c", 5)
    await served.answered("after")
    # Committed (what fitted) ahead of the background plan, but not answered yet.
    assert served.applier.committed == ["refused", "after"]
    assert "refused" not in served.answers
    served.applier.held["big"].set()
    resp = await served.answered("refused")
    assert served.order == ["after", "big", "refused"]
    # With the background plan's index: its worker refreshes to a state that has it.
    assert resp.index == served.answers["big"].index == 3
    assert (resp.full, resp.rejected_nodes) == (False, ["n-shared"])
