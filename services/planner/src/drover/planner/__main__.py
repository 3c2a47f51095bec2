"""`drover-planner`: the plan applier service. Every instance waits for leadership (a Postgres
advisory lock held on a dedicated connection); the leader takes a new lease epoch and serves
plan submissions one at a time; the others stand by."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import os
import socket
import time
from typing import Any

from nats.aio.msg import Msg

from drover.common.bus import PLAN_SUBJECT, close, connect, ensure_streams
from drover.common.leader import hold_leadership, wait_for_leadership
from drover.common.replica import Replica
from drover.common.service import run_service
from drover.common.settings import Settings
from drover.common.store import EventStore, FencedError, RecordedEvent, libpq_url
from drover.common.telemetry import extract, tracer
from drover.planner.applier import LEASE, PlanApplier, Prepared, plan_size
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
        self._heap: list[tuple[float, int, PlanRequest, Msg]] = []
        self._seq = 0
        self._ready = asyncio.Event()

    def put(self, req: PlanRequest, msg: Msg) -> None:
        self._seq += 1
        arrival = time.monotonic() + plan_size(req) * PLAN_WEIGHT
        heapq.heappush(self._heap, (arrival, self._seq, req, msg))
        self._ready.set()

    def peek_size(self) -> int:
        """The size of the plan `pop` would return."""
        return plan_size(self._heap[0][2])

    def __bool__(self) -> bool:
        return bool(self._heap)

    def pop(self) -> tuple[PlanRequest, Msg]:
        _, _, req, msg = heapq.heappop(self._heap)
        return req, msg

    async def wait(self, other: asyncio.Future[Any]) -> None:
        """Until a plan is queued or `other` is done."""
        self._ready.clear()
        if self._heap:
            return
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            await asyncio.wait([ready, other], return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()

    async def get(self, timeout: float) -> tuple[PlanRequest, Msg] | None:
        if not self._heap:
            self._ready.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), timeout)
        if not self._heap:
            return None
        _, _, req, msg = heapq.heappop(self._heap)
        return req, msg


async def run(settings: Settings, stop: asyncio.Event) -> None:
    store = EventStore(settings.database_url)
    nc = await connect(settings.nats_url, "planner")
    js = nc.jetstream()
    await ensure_streams(js)
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
        queue.put(req, msg)

    sub = await nc.subscribe(PLAN_SUBJECT, queue="planner", cb=on_plan)

    watcher = asyncio.create_task(hold_leadership(lock_conn, stop))

    async def answer(msg: Msg, resp: PlanResponse) -> None:
        try:
            await msg.respond(encode_response(resp))
        except Exception as e:  # the worker retries; a committed plan's eval is then done
            log.warning("could not answer a plan: %s", e)

    async def prepare(req: PlanRequest, msg: Msg, pending: Prepared | None) -> Prepared | None:
        """Verify a plan; answer it at once when there is nothing to commit (or it failed)."""
        try:
            with _tracer.start_as_current_span("planner.apply", context=extract(msg.headers)):
                prepared = await applier.prepare(req, pending)
        except Exception as e:
            log.exception("plan failed")
            await answer(msg, PlanResponse(full=False, error=str(e)))
            return None
        return prepared

    def start_append(prepared: Prepared, msg: Msg) -> asyncio.Task[list[RecordedEvent]]:
        # The task inherits the span: the appended events carry the plan's trace onwards.
        with _tracer.start_as_current_span("planner.commit", context=extract(msg.headers)):
            return asyncio.create_task(applier.append(prepared))

    # One plan is appended at a time (`inflight`); while it is, the next plan in the queue is
    # verified against the state with the in-flight plan applied optimistically, and its append
    # starts as soon as the previous one is in. The previous plan's replica update and answer
    # then overlap the next append.
    inflight: tuple[Prepared, Msg, asyncio.Task[list[RecordedEvent]]] | None = None
    try:
        while not stop.is_set():
            if inflight is None:
                item = await queue.get(0.5)
                if item is None:
                    continue
                nxt = await prepare(*item, None)
                if nxt is None:
                    continue
                if nxt.answer is not None:
                    await answer(item[1], nxt.answer)
                    continue
                inflight = (nxt, item[1], start_append(nxt, item[1]))
                continue
            prepared, msg, task = inflight
            if not queue and not task.done():
                await queue.wait(task)
            # A larger plan next is verified only once the in-flight one is answered: a
            # count-10 job's plan does not wait for a 1,000-alloc plan's verification.
            item = queue.pop() if queue and queue.peek_size() <= plan_size(prepared.req) else None
            nxt = await prepare(*item, prepared) if item is not None else None
            try:
                recorded = await task
            except FencedError:
                log.error("fenced: a newer leader exists; stepping down")
                stop.set()
                break
            except Exception as e:
                log.exception("plan failed")
                await answer(msg, PlanResponse(full=False, error=str(e)))
                inflight = None
                if item is not None and nxt is not None:
                    # It was verified as if the failed plan had committed: verify it again.
                    queue.put(*item)
                continue
            inflight = None
            if item is not None and nxt is not None:
                if nxt.answer is None:
                    inflight = (nxt, item[1], start_append(nxt, item[1]))
                else:
                    # Nothing to commit; the worker refreshes to at least the plan just in.
                    nxt.answer.index = max(nxt.answer.index, recorded[-1].position)
            with _tracer.start_as_current_span("planner.finish", context=extract(msg.headers)):
                resp = await applier.finish(prepared, recorded)
            await answer(msg, resp)
            if item is not None and nxt is not None and nxt.answer is not None:
                await answer(item[1], nxt.answer)
        if inflight is not None:
            # Stopping: let the append in flight end before the connections close.
            with contextlib.suppress(Exception):
                await inflight[2]
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
