"""`drover-worker`: pull ready evals from the EVALS work queue, schedule each on the in-memory
replica, submit the plan to the plan applier, refresh and retry on a partial commit; ack when
the eval's outcome is committed (drover.worker.worker, drover.worker.loop). Run as many as you
like.

A worker of the large lane (DROVER_WORKER_LANE=large, which `drover up` gives one worker per
large eval the broker may hand out) takes large evals first and lowers its CPU priority (nice
DROVER_LARGE_LANE_NICE, 10), so on a busy machine scheduling 1,000 allocs gives way to what a
small job waits for; the small lane takes small evals first. It works on
DROVER_LARGE_LANE_DEPTH evals at once (2)."""

from __future__ import annotations

import asyncio
import logging
import os

from drover.runtime.bus import close, connect_streams
from drover.runtime.metrics import Metrics, follow_replica, published
from drover.runtime.replica import Replica
from drover.runtime.service import run_service
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore
from drover.scheduler.lanes import LANE_LARGE
from drover.worker.loop import subscribe, work
from drover.worker.worker import Worker

log = logging.getLogger("drover.worker")


async def run(settings: Settings, stop: asyncio.Event) -> None:
    """Work on evals of the worker's lane (DROVER_WORKER_LANE) until `stop`."""
    store = EventStore(settings.database())
    nc, js = await connect_streams(settings.nats_url, "worker", settings.nats_credentials())
    replica = Replica(store, js)
    await replica.start()
    metrics = Metrics("worker")
    follow_replica(metrics, replica)
    depth = settings.large_lane_depth if settings.worker_lane == LANE_LARGE else 1
    worker = Worker(nc, replica, depth, settings.plan_attempts)
    if settings.worker_lane == LANE_LARGE and settings.large_lane_nice:
        os.nice(settings.large_lane_nice)
    own, other = await subscribe(js, settings.worker_lane, settings.eval_ack_wait)
    log.info(
        "taking evals, lane %r first (ack wait %g s)", settings.worker_lane or "small", settings.eval_ack_wait
    )
    async with published(metrics, js, stop):
        await work(worker, own, other, settings.worker_lane, settings.eval_ack_wait, stop)
    await close(nc)
    store.close()


def main() -> None:
    """`drover-worker`."""
    run_service("worker", run)
