"""`drover-gc`: the garbage collector (drover.gc.collector). One instance is active (advisory
lock, lease epoch that fences a deposed one's appends: drover.runtime.leader), the others
stand by and take over from the log."""

from __future__ import annotations

import asyncio
import logging

from nats.aio.client import Client
from nats.js import JetStreamContext

from drover.gc.collector import Collector
from drover.runtime.figures import Figures, follow_replica, published
from drover.runtime.leader import run_as_leader
from drover.runtime.locks import GC_LOCK_KEY
from drover.runtime.replica import Replica
from drover.runtime.service import run_service
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, FencedError, NewEvent, RecordedEvent

log = logging.getLogger("drover.gc")
LEASE = "gc"


async def lead(store: EventStore, js: JetStreamContext, settings: Settings, lease: tuple[str, int],
               stop: asyncio.Event) -> None:  # fmt: skip
    """Collect as the leader of the lease, until `stop` (or until fenced)."""
    replica = Replica(store, js)
    await replica.start()

    async def append(items: list[NewEvent]) -> list[RecordedEvent] | None:
        try:
            return await asyncio.to_thread(store.append, items, fence=lease)
        except FencedError:
            log.error("fenced: a newer collector leads; stepping down")
            stop.set()
        except Exception as e:
            log.warning("append failed: %s; retrying", e)
        return None

    collector = Collector(replica.state, settings, append, replica.wait_for)
    replica.listeners.append(collector.on_event)
    figures = Figures("gc")
    follow_replica(figures, replica)
    async with published(figures, js, stop):
        await collector.loop(stop)


async def run(settings: Settings, stop: asyncio.Event) -> None:
    """Stand by until this instance leads, then collect until `stop` (or until fenced)."""

    async def leading(store: EventStore, nc: Client, js: JetStreamContext, epoch: int) -> None:
        await lead(store, js, settings, (LEASE, epoch), stop)

    await run_as_leader(settings, stop, leading, role="gc", key=GC_LOCK_KEY, lease=LEASE, logger=log)


def main() -> None:
    """`drover-gc`."""
    run_service("gc", run)
