"""`drover-leader`: Nomad's leader loops - the heartbeater (drover.leader.heartbeats), node
drainer (drover.leader.drain), deployment watcher (drover.leader.deployments), job restart
watcher (drover.leader.jobrestarts), failed-eval reaper (drover.leader.failed) and periodic
dispatcher (drover.leader.periodic). One instance is active (advisory lock, lease epoch that
fences a deposed one's appends: drover.runtime.leader), the others stand by."""

from __future__ import annotations

import asyncio
import logging
import time

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from drover.leader.deployments import watch_deployments
from drover.leader.drain import drain
from drover.leader.failed import reap_failed_evals
from drover.leader.heartbeats import Heartbeater, watch_heartbeats
from drover.leader.jobrestarts import watch_job_restarts
from drover.leader.periodic import dispatch_periodic
from drover.runtime.bus import HEARTBEAT_SUBJECT
from drover.runtime.leader import Leader, run_as_leader
from drover.runtime.locks import LEADER_LOCK_KEY
from drover.runtime.metrics import Metrics, follow_replica, published
from drover.runtime.replica import Replica
from drover.runtime.service import run_service
from drover.runtime.settings import Settings

log = logging.getLogger("drover.leader")
LEASE = "leader"


async def lead(settings: Settings, leader: Leader, nc: Client, js: JetStreamContext) -> None:
    """Watch heartbeats, drains, deployments and job restarts, reap failed evals and launch
    periodic jobs, as the leader of the lease, until `leader.stop`."""
    replica = Replica(leader.store, js)
    heartbeater = Heartbeater(settings, replica)
    replica.listeners.append(heartbeater.on_event)

    async def on_heartbeat(msg: Msg) -> None:
        try:
            heartbeater.on_heartbeat(msg.data)
        except (ValueError, KeyError, TypeError) as e:
            log.warning("bad heartbeat message: %s", e)

    # Heard before the snapshot is taken, so no beat in between is lost.
    sub = await nc.subscribe(HEARTBEAT_SUBJECT, cb=on_heartbeat)
    await replica.start()
    heartbeater.start(time.time_ns())
    drainer = asyncio.create_task(drain(replica, leader))
    deployments = asyncio.create_task(watch_deployments(replica, leader))
    restarts = asyncio.create_task(watch_job_restarts(replica, leader))
    reaper = asyncio.create_task(reap_failed_evals(settings, replica, js, leader))
    launches = asyncio.create_task(dispatch_periodic(replica, leader))
    metrics = Metrics("leader")
    follow_replica(metrics, replica)
    try:
        async with published(metrics, js, leader.stop):
            await watch_heartbeats(heartbeater, leader)
    finally:
        leader.stop.set()
        await drainer
        await deployments
        await restarts
        await reaper
        await launches
        await sub.unsubscribe()


async def run(settings: Settings, stop: asyncio.Event) -> None:
    """Stand by until this instance leads, then run the leader loops until `stop` (or until
    fenced)."""

    async def leading(leader: Leader, nc: Client, js: JetStreamContext) -> None:
        await lead(settings, leader, nc, js)

    await run_as_leader(settings, stop, leading, role="leader", key=LEADER_LOCK_KEY, lease=LEASE, logger=log)


def main() -> None:
    """`drover-leader`."""
    run_service("leader", run)
