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

from nats.aio.msg import Msg

from drover.common.bus import PLAN_SUBJECT, close, connect, ensure_streams
from drover.common.leader import hold_leadership, wait_for_leadership
from drover.common.replica import Replica
from drover.common.service import run_service
from drover.common.settings import Settings
from drover.common.store import EventStore, FencedError, libpq_url
from drover.common.telemetry import extract, tracer
from drover.planner.applier import LEASE, PlanApplier
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
        plan = req.plan
        size = sum(len(v) for v in plan.node_allocation.values()) + sum(
            len(v) for v in plan.node_update.values()
        )
        self._seq += 1
        heapq.heappush(self._heap, (time.monotonic() + size * PLAN_WEIGHT, self._seq, req, msg))
        self._ready.set()

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
    try:
        while not stop.is_set():
            item = await queue.get(0.5)
            if item is None:
                continue
            req, msg = item
            answered = False

            async def answer(resp: PlanResponse, msg: Msg = msg) -> None:
                nonlocal answered
                answered = True
                try:
                    await msg.respond(encode_response(resp))
                except Exception as e:  # the worker retries; a committed plan's eval is then done
                    log.warning("could not answer a plan: %s", e)

            try:
                with _tracer.start_as_current_span("planner.apply", context=extract(msg.headers)):
                    await applier.apply(req, answer)
            except FencedError:
                log.error("fenced: a newer leader exists; stepping down")
                stop.set()
                break
            except Exception as e:
                log.exception("plan failed")
                if not answered:
                    await answer(PlanResponse(full=False, error=str(e)))
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
