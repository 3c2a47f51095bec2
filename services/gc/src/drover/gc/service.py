"""`drover-gc`: the garbage collector (drover.gc.collector). One instance is active (advisory
lock, lease epoch that fences a deposed one's appends: drover.runtime.leader), the others
stand by and take over from the log."""

from __future__ import annotations

import asyncio
import logging

from nats.aio.client import Client
from nats.js import JetStreamContext

from drover.gc.collector import Collector
from drover.runtime.leader import Leader, run_as_leader
from drover.runtime.locks import GC_LOCK_KEY
from drover.runtime.metrics import Metrics, follow_replica, published
from drover.runtime.replica import Replica
from drover.runtime.service import run_service
from drover.runtime.settings import Settings
from drover.runtime.store import NewEvent, RecordedEvent

log = logging.getLogger("drover.gc")
LEASE = "gc"


async def lead(leader: Leader, js: JetStreamContext, settings: Settings) -> None:
    """Collect as the leader of the lease, until `leader.stop` (set when fenced, too)."""
    replica = Replica(leader.store, js)
    await replica.start()

    async def append(items: list[NewEvent]) -> list[RecordedEvent] | None:
        return await leader.try_append(items, "append failed")

    collector = Collector(replica.state, settings, append, replica.wait_for)
    replica.listeners.append(collector.on_event)
    metrics = Metrics("gc")
    follow_replica(metrics, replica)
    async with published(metrics, js, leader.stop):
        await collector.loop(leader.stop)


async def run(settings: Settings, stop: asyncio.Event) -> None:
    """Stand by until this instance leads, then collect until `stop` (or until fenced)."""

    async def leading(leader: Leader, nc: Client, js: JetStreamContext) -> None:
        await lead(leader, js, settings)

    await run_as_leader(settings, stop, leading, role="gc", key=GC_LOCK_KEY, lease=LEASE, logger=log)


def main() -> None:
    """`drover-gc`."""
    run_service("gc", run)
