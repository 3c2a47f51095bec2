"""`drover-planner`: the plan applier service. Every instance waits for leadership (a Postgres
advisory lock held on a dedicated connection: drover.runtime.leader); the leader takes a new
lease epoch and serves plan submissions (drover.planner.server); the others stand by."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from drover.planner.applier import LEASE, PlanApplier, plan_size
from drover.planner.planqueue import PlanQueue
from drover.planner.server import PlanServer
from drover.runtime.bus import PLAN_SUBJECT, close, connect_streams
from drover.runtime.leader import leadership
from drover.runtime.locks import PLANNER_LOCK_KEY
from drover.runtime.replica import Replica
from drover.runtime.service import run_service
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, libpq_url
from drover.scheduler.wire import PlanResponse, decode_request, encode_response

log = logging.getLogger("drover.planner")


async def respond(msg: Msg, resp: PlanResponse) -> None:
    """Answer a plan's worker."""
    try:
        await msg.respond(encode_response(resp))
    except Exception as e:  # the worker retries; a committed plan's eval is then done
        log.warning("could not answer a plan: %s", e)


async def lead(store: EventStore, nc: Client, js: JetStreamContext, epoch: int, stop: asyncio.Event) -> None:
    """Serve the plans submitted on NATS as the leader of `epoch`, until `stop`."""
    replica = Replica(store, js)
    await replica.start()
    server: PlanServer[Msg] = PlanServer(PlanApplier(store, replica, epoch), respond)
    queue: PlanQueue[Msg] = PlanQueue()

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
    try:
        await server.run(queue, stop)
    finally:
        await sub.unsubscribe()


async def run(settings: Settings, stop: asyncio.Event) -> None:
    """Stand by until this instance leads, then serve plans until `stop` (or until fenced)."""
    store = EventStore(settings.database_url)
    try:
        nc, js = await connect_streams(settings.nats_url, "planner")
        conninfo = libpq_url(settings.database_url)
        async with leadership(
            store, conninfo, PLANNER_LOCK_KEY, LEASE, stop, role="planner", logger=log
        ) as epoch:
            try:
                if epoch is not None:
                    await lead(store, nc, js, epoch, stop)
            finally:
                await close(nc)
    finally:
        store.close()


def main() -> None:
    """`drover-planner`."""
    run_service("planner", run)
