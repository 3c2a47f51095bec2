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
from drover.runtime.bus import PLAN_SUBJECT
from drover.runtime.leader import Leader, run_as_leader
from drover.runtime.locks import PLANNER_LOCK_KEY
from drover.runtime.metrics import Metrics, follow_replica, published
from drover.runtime.replica import Replica
from drover.runtime.service import run_service
from drover.runtime.settings import Settings
from drover.scheduler.wire import PlanResponse, decode_request, encode_response

log = logging.getLogger("drover.planner")


async def respond(msg: Msg, resp: PlanResponse) -> None:
    """Answer a plan's worker."""
    try:
        await msg.respond(encode_response(resp))
    except Exception as e:  # the worker retries; a committed plan's eval is then done
        log.warning("could not answer a plan: %s", e)


async def lead(leader: Leader, nc: Client, js: JetStreamContext) -> None:
    """Serve the plans submitted on NATS as the leader of the lease, until `leader.stop` (set
    when fenced, too)."""
    replica = Replica(leader.store, js)
    await replica.start()
    metrics = Metrics("planner")
    follow_replica(metrics, replica)
    server: PlanServer[Msg] = PlanServer(PlanApplier(leader, replica, metrics), respond)
    queue: PlanQueue[Msg] = PlanQueue()
    metrics.collectors.append(lambda f: f.gauge("plan.queue_depth", len(queue)))

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
        async with published(metrics, js, leader.stop):
            await server.run(queue, leader.stop)
    finally:
        await sub.unsubscribe()


async def run(settings: Settings, stop: asyncio.Event) -> None:
    """Stand by until this instance leads, then serve plans until `stop` (or until fenced)."""

    async def leading(leader: Leader, nc: Client, js: JetStreamContext) -> None:
        await lead(leader, nc, js)

    await run_as_leader(
        settings, stop, leading, role="planner", key=PLANNER_LOCK_KEY, lease=LEASE, logger=log
    )


def main() -> None:
    """`drover-planner`."""
    run_service("planner", run)
