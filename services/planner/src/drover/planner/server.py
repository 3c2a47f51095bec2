"""Serving the plan queue: plans are verified strictly one after another, each against the
newest state. One exception to committing them in that order: a large plan that only adds
commits in the background, and meanwhile small plans of other jobs are verified against the
state with its placements added and committed at once - a count-10 job's plan does not wait for
a 1,000-alloc commit. Whichever commits first, no index shows a node over-committed (see
`planapply.adds_only`). A plan that went ahead and was refused nodes is answered only once the
background plan is in the log, with its index: its worker must refresh to a state that has
those placements.

`PlanServer` knows nothing of NATS: it is given the applier and how to answer a plan's worker
(drover.planner.service wires them)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Generic, Protocol, TypeVar

from drover.planner.applier import BACKGROUND_FROM, Answer, Verified, plan_size
from drover.planner.planqueue import PlanQueue
from drover.runtime.store import RecordedEvent
from drover.runtime.telemetry import extract, tracer
from drover.scheduler.planapply import PendingPlacements
from drover.scheduler.wire import PlanRequest, PlanResponse

log = logging.getLogger("drover.planner")
_tracer = tracer("drover.planner")


class Reply(Protocol):
    """How a plan's worker is reached (the NATS message the plan came in); its headers carry
    the plan's trace context."""

    @property
    def headers(self) -> dict[str, str] | None: ...


R = TypeVar("R", bound=Reply)


class Applier(Protocol):
    """What the server asks of the plan applier (drover.planner.applier.PlanApplier)."""

    async def verify(
        self, req: PlanRequest, pending: PendingPlacements | None = None, arrived: float = 0.0
    ) -> Verified: ...

    async def commit(self, verified: Verified) -> list[RecordedEvent] | None: ...

    async def finish(
        self,
        verified: Verified,
        recorded: list[RecordedEvent],
        answer: Answer,
        before_apply: Callable[[], Awaitable[None]] | None = None,
    ) -> None: ...


@dataclass
class Background(Generic[R]):
    """A large plan that only adds, committing while smaller plans of other jobs go ahead."""

    verified: Verified
    reply: R
    task: asyncio.Task[list[RecordedEvent] | None]
    settled: bool = False
    # Answers to plans that went ahead of this one and were refused nodes, held until it is in
    # the log (see `PlanServer.serve`).
    deferred: list[tuple[R, PlanResponse]] = field(default_factory=list)

    def may_overtake(self, req: PlanRequest) -> bool:
        plan, pending = req.plan, self.verified.pending
        assert pending is not None
        if plan_size(req) >= BACKGROUND_FROM or plan.eval_id == self.verified.req.plan.eval_id:
            return False
        return plan.job is None or (plan.job.namespace, plan.job.id) != (pending.namespace, pending.job_id)


class PlanServer(Generic[R]):
    """Serves plans from a `PlanQueue` through `applier`, answering each plan's worker with
    `respond(reply, response)`."""

    def __init__(self, applier: Applier, respond: Callable[[R, PlanResponse], Awaitable[None]]) -> None:
        self.applier = applier
        self.respond = respond

    async def run(self, queue: PlanQueue[R], stop: asyncio.Event) -> None:
        """Serve plans until `stop` (which the applier sets when a commit is fenced)."""
        background: Background[R] | None = None
        while not stop.is_set():
            if background is not None and background.settled:
                background = None
            if background is not None:
                if background.task.done():
                    await self.settle(background)
                    continue
                # Smaller plans of other jobs go ahead; the rest wait for the commit.
                item = queue.take(background.may_overtake)
                if item is None:
                    await queue.wait(background.task)
                else:
                    await self.serve(*item, background)
                continue
            item = await queue.get(0.5)
            if item is not None:
                background = await self.serve(*item, None)
        if background is not None:
            # Stopping: let the commit in flight end before the connections close.
            with contextlib.suppress(Exception):
                await background.task
            await self.answer_deferred(background)

    async def serve(
        self, req: PlanRequest, reply: R, arrived: float, background: Background[R] | None
    ) -> Background[R] | None:
        """Verify and commit one plan and answer it - or, for a large plan that only adds when
        nothing is in the background, start its commit there and return it."""
        answered = False

        async def answer(resp: PlanResponse) -> None:
            nonlocal answered
            answered = True
            if background is not None and resp.rejected_nodes and not resp.error:
                # Refused nodes while verified against the background plan's placements: its
                # worker must refresh to a state that has them, or it schedules the same nodes
                # from the same snapshot again, is refused again, and after a few rounds fails
                # the eval for a minute (max plan attempts). Answered once that plan is in the
                # log, with its index.
                background.deferred.append((reply, resp))
                return
            await self.respond(reply, resp)

        applier = self.applier
        try:
            with _tracer.start_as_current_span("planner.apply", context=extract(reply.headers)):
                pending = background.verified.pending if background is not None else None
                verified = await applier.verify(req, pending, arrived)
                if verified.answer is not None:
                    await answer(verified.answer)
                    return None
                if background is None and verified.pending is not None:
                    # The task inherits the span: the appended events carry the plan's trace.
                    return Background(verified, reply, asyncio.create_task(applier.commit(verified)))
                recorded = await applier.commit(verified)
                if recorded is None:  # fenced: this planner stops, and the worker asks again
                    return None

                async def settle_first() -> None:
                    # The background plan committed meanwhile: into the replica first, from
                    # memory, rather than read back from the log as a gap before this plan.
                    if (
                        background is not None
                        and background.verified.returned.is_set()
                        and not background.settled
                    ):
                        await self.settle(background)

                await applier.finish(verified, recorded, answer, settle_first)
        except Exception as e:
            log.exception("plan failed")
            if not answered:
                await answer(PlanResponse(full=False, error=str(e)))
        return None

    async def settle(self, bg: Background[R]) -> None:
        """Answer the background plan once its commit is in (or failed)."""
        bg.settled = True
        try:
            recorded = await bg.task
        except Exception as e:
            log.exception("plan failed")
            await self.respond(bg.reply, PlanResponse(full=False, error=str(e)))
            await self.answer_deferred(bg)
            return
        if recorded is None:  # fenced: this planner stops, and the worker asks again
            await self.answer_deferred(bg)
            return
        with _tracer.start_as_current_span("planner.finish", context=extract(bg.reply.headers)):
            await self.applier.finish(bg.verified, recorded, lambda resp: self.respond(bg.reply, resp))
        await self.answer_deferred(bg, recorded[-1].position)

    async def answer_deferred(self, bg: Background[R], index: int = 0) -> None:
        """Answer the plans held for `bg` (see `serve`), with `index` if it is newer."""
        for reply, resp in bg.deferred:
            await self.respond(reply, replace(resp, index=max(resp.index, index)))
        bg.deferred.clear()
