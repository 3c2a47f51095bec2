"""`drover-planner`: the plan applier service. Every instance waits for leadership (a Postgres
advisory lock held on a dedicated connection); the leader takes a new lease epoch and serves
plan submissions one at a time; the others stand by.

Plans are verified strictly one after another, each against the newest state. One exception
to committing them in that order: a large plan that only adds allocs commits in the background,
and meanwhile small plans of other jobs are verified against the state with its placements
added and committed at once - a count-10 job's plan does not wait for a 1,000-alloc commit.
Whichever commits first, no index shows a node over-committed (see `planapply.adds_only`).
A plan that went ahead and was refused nodes is answered only once the background plan is in
the log, with its index: its worker must refresh to a state that has those placements."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from nats.aio.msg import Msg

from drover.planner.applier import BACKGROUND_FROM, LEASE, PlanApplier, Verified, plan_size
from drover.runtime.bus import PLAN_SUBJECT, close, connect_streams
from drover.runtime.leader import hold_leadership, wait_for_leadership
from drover.runtime.replica import Replica
from drover.runtime.service import run_service
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, FencedError, RecordedEvent, libpq_url
from drover.runtime.telemetry import extract, tracer
from drover.scheduler.wire import PlanRequest, PlanResponse, decode_request, encode_response

log = logging.getLogger("drover.planner")
_tracer = tracer("drover.planner")
LEADER_LOCK_KEY = 4_646_001
# Seconds a plan counts as arriving later per alloc it places or stops.
PLAN_WEIGHT = 0.001


class PlanQueue:
    """Plans waiting for the applier. Applied one at a time, smallest first with aging (a plan
    counts as arriving PLAN_WEIGHT later per alloc it touches): a count-10 job's plan does not
    wait behind a queued 1,000-alloc one, and a large plan is passed over for a bounded time."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, float, PlanRequest, Msg]] = []
        self._seq = 0
        self._ready = asyncio.Event()

    def put(self, req: PlanRequest, msg: Msg) -> None:
        size = plan_size(req)
        self._seq += 1
        now = time.monotonic()
        heapq.heappush(self._heap, (now + size * PLAN_WEIGHT, self._seq, now, req, msg))
        self._ready.set()

    def take(self, may: Callable[[PlanRequest], bool]) -> tuple[PlanRequest, Msg, float] | None:
        """The first plan in order that `may` allows, taken out of the queue."""
        allowed = [entry for entry in self._heap if may(entry[3])]
        if not allowed:
            return None
        entry = min(allowed)
        self._heap.remove(entry)
        heapq.heapify(self._heap)
        return entry[3], entry[4], entry[2]

    async def wait(self, other: asyncio.Future[Any]) -> None:
        """Until another plan is queued or `other` is done."""
        self._ready.clear()
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            await asyncio.wait({ready, other}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()

    async def get(self, timeout: float) -> tuple[PlanRequest, Msg, float] | None:
        if not self._heap:
            self._ready.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), timeout)
        if not self._heap:
            return None
        _, _, arrived, req, msg = heapq.heappop(self._heap)
        return req, msg, arrived


@dataclass
class Background:
    """A large plan that only adds, committing while smaller plans of other jobs go ahead."""

    verified: Verified
    msg: Msg
    task: asyncio.Task[list[RecordedEvent]]
    settled: bool = False
    # Answers to plans that went ahead of this one and were refused nodes, held until it is in
    # the log (see `serve`).
    deferred: list[tuple[Msg, PlanResponse]] = field(default_factory=list)

    def may_overtake(self, req: PlanRequest) -> bool:
        plan, pending = req.plan, self.verified.pending
        assert pending is not None
        if plan_size(req) >= BACKGROUND_FROM or plan.eval_id == self.verified.req.plan.eval_id:
            return False
        return plan.job is None or (plan.job.namespace, plan.job.id) != (pending.namespace, pending.job_id)


async def _respond(msg: Msg, resp: PlanResponse) -> None:
    try:
        await msg.respond(encode_response(resp))
    except Exception as e:  # the worker retries; a committed plan's eval is then done
        log.warning("could not answer a plan: %s", e)


async def run(settings: Settings, stop: asyncio.Event) -> None:
    store = EventStore(settings.database_url)
    nc, js = await connect_streams(settings.nats_url, "planner")
    holder = f"{socket.gethostname()}:{os.getpid()}"
    lock_conn = await wait_for_leadership(libpq_url(settings.database_url), LEADER_LOCK_KEY, stop)
    if lock_conn is None:
        return
    epoch = await asyncio.to_thread(store.acquire_lease, LEASE, holder)
    log.info("planner %s is the leader (epoch %d)", holder, epoch)
    replica = Replica(store, js)
    await replica.start()
    applier = PlanApplier(store, replica, epoch)
    queue = PlanQueue()

    async def on_plan(msg: Msg) -> None:
        # Decoded on arrival: this overlaps the previous plan's commit, which waits on Postgres.
        try:
            req = decode_request(msg.data)
        except Exception as e:
            log.warning("undecodable plan: %s", e)
            with contextlib.suppress(Exception):
                await msg.respond(encode_response(PlanResponse(full=False, error=f"bad plan: {e}")))
            return
        if log.isEnabledFor(logging.DEBUG):
            log.debug("plan for %s (%d allocs) arrived", req.plan.eval_id, plan_size(req))
        queue.put(req, msg)

    sub = await nc.subscribe(PLAN_SUBJECT, queue="planner", cb=on_plan)

    watcher = asyncio.create_task(hold_leadership(lock_conn, stop))

    async def serve(
        req: PlanRequest, msg: Msg, arrived: float, background: Background | None
    ) -> Background | None:
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
                background.deferred.append((msg, resp))
                return
            await _respond(msg, resp)

        try:
            with _tracer.start_as_current_span("planner.apply", context=extract(msg.headers)):
                pending = background.verified.pending if background is not None else None
                verified = await applier.verify(req, pending, arrived)
                if verified.answer is not None:
                    await answer(verified.answer)
                    return None
                if background is None and verified.pending is not None:
                    # The task inherits the span: the appended events carry the plan's trace.
                    return Background(verified, msg, asyncio.create_task(applier.commit(verified)))
                recorded = await applier.commit(verified)

                async def settle_first() -> None:
                    # The background plan committed meanwhile: into the replica first, from
                    # memory, rather than read back from the log as a gap before this plan.
                    if (
                        background is not None
                        and background.verified.returned.is_set()
                        and not background.settled
                    ):
                        await settle(background)

                await applier.finish(verified, recorded, answer, settle_first)
        except FencedError:
            raise
        except Exception as e:
            log.exception("plan failed")
            if not answered:
                await answer(PlanResponse(full=False, error=str(e)))
        return None

    async def settle(bg: Background) -> None:
        """Answer the background plan once its commit is in (or failed)."""
        bg.settled = True
        try:
            recorded = await bg.task
        except FencedError:
            raise
        except Exception as e:
            log.exception("plan failed")
            await _respond(bg.msg, PlanResponse(full=False, error=str(e)))
            await answer_deferred(bg)
            return
        with _tracer.start_as_current_span("planner.finish", context=extract(bg.msg.headers)):
            await applier.finish(bg.verified, recorded, lambda resp: _respond(bg.msg, resp))
        await answer_deferred(bg, recorded[-1].position)

    async def answer_deferred(bg: Background, index: int = 0) -> None:
        for msg, resp in bg.deferred:
            await _respond(msg, replace(resp, index=max(resp.index, index)))
        bg.deferred.clear()

    background: Background | None = None
    try:
        while not stop.is_set():
            try:
                if background is not None and background.settled:
                    background = None
                if background is not None:
                    if background.task.done():
                        await settle(background)
                        continue
                    # Smaller plans of other jobs go ahead; the rest wait for the commit.
                    item = queue.take(background.may_overtake)
                    if item is None:
                        await queue.wait(background.task)
                    else:
                        await serve(*item, background)
                    continue
                item = await queue.get(0.5)
                if item is not None:
                    background = await serve(*item, None)
            except FencedError:
                log.error("fenced: a newer leader exists; stepping down")
                stop.set()
                break
        if background is not None:
            # Stopping: let the commit in flight end before the connections close.
            with contextlib.suppress(Exception):
                await background.task
            await answer_deferred(background)
    finally:
        watcher.cancel()
        await sub.unsubscribe()
        await close(nc)
        await lock_conn.close()
        store.close()


def main() -> None:
    run_service("planner", run)


if __name__ == "__main__":
    main()
