"""`drover-watcher`: the heartbeat watcher (drover.watcher.heartbeats), node drainer
(drover.watcher.drain), deployment watcher (drover.watcher.deployments), restart watcher
(drover.watcher.restarts), failed-eval reaper (drover.watcher.failed) and periodic dispatcher
(drover.watcher.periodic). One instance is active (advisory lock, lease epoch that fences a
deposed one's appends: drover.runtime.leader), the others stand by."""

from __future__ import annotations

import asyncio
import logging
import time

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from drover.runtime.bus import HEARTBEAT_SUBJECT
from drover.runtime.figures import Figures, follow_replica, published
from drover.runtime.leader import run_as_leader
from drover.runtime.locks import WATCHER_LOCK_KEY
from drover.runtime.replica import Replica
from drover.runtime.service import run_service
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore
from drover.watcher.deployments import watch_deployments
from drover.watcher.drain import drain
from drover.watcher.failed import reap_failed_evals
from drover.watcher.heartbeats import HeartbeatWatcher, watch_heartbeats
from drover.watcher.periodic import dispatch_periodic
from drover.watcher.restarts import watch_restarts

log = logging.getLogger("drover.watcher")
LEASE = "heartbeat-watcher"


async def lead(
    settings: Settings,
    store: EventStore,
    nc: Client,
    js: JetStreamContext,
    lease: tuple[str, int],
    stop: asyncio.Event,
) -> None:
    """Watch heartbeats, drains, deployments and job restarts, reap failed evals and launch
    periodic jobs, as the leader of the lease, until `stop`."""
    replica = Replica(store, js)
    watcher = HeartbeatWatcher(settings, replica)
    replica.listeners.append(watcher.on_event)

    async def on_heartbeat(msg: Msg) -> None:
        try:
            watcher.on_heartbeat(msg.data)
        except (ValueError, KeyError, TypeError) as e:
            log.warning("bad heartbeat message: %s", e)

    # Heard before the snapshot is taken, so no beat in between is lost.
    sub = await nc.subscribe(HEARTBEAT_SUBJECT, cb=on_heartbeat)
    await replica.start()
    watcher.start(time.time_ns())
    drainer = asyncio.create_task(drain(replica, store, lease, stop))
    deployments = asyncio.create_task(watch_deployments(replica, store, lease, stop))
    restarts = asyncio.create_task(watch_restarts(replica, store, lease, stop))
    reaper = asyncio.create_task(reap_failed_evals(settings, replica, store, js, lease, stop))
    launches = asyncio.create_task(dispatch_periodic(replica, store, lease, stop))
    figures = Figures("watcher")
    follow_replica(figures, replica)
    try:
        async with published(figures, js, stop):
            await watch_heartbeats(watcher, store, lease, stop)
    finally:
        stop.set()
        await drainer
        await deployments
        await restarts
        await reaper
        await launches
        await sub.unsubscribe()


async def run(settings: Settings, stop: asyncio.Event) -> None:
    """Stand by until this instance leads, then watch until `stop` (or until fenced)."""

    async def leading(store: EventStore, nc: Client, js: JetStreamContext, epoch: int) -> None:
        await lead(settings, store, nc, js, (LEASE, epoch), stop)

    await run_as_leader(
        settings, stop, leading, role="watcher", key=WATCHER_LOCK_KEY, lease=LEASE, logger=log
    )


def main() -> None:
    """`drover-watcher`."""
    run_service("watcher", run)
