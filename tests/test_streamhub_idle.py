"""The event stream's feed, on real NATS JetStream and PostgreSQL: started by the first
subscriber, stopped once no stream has been open for its idle time (its replica would otherwise
apply every event of the cluster for nobody), and started again by the next, who still gets
every position after its index once, in order."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from drover.api.streamhub import Frame, StreamHub, Subscription
from drover.model import Node
from drover.model.events import NodeRegistered
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore

IDLE = 0.3


def _register(store: EventStore, *names: str) -> int:
    return store.append([NodeRegistered(node=Node(id=n)) for n in names])[-1].position


async def _take(runs: AsyncGenerator[list[Frame] | None], until: int) -> list[int]:
    """The positions of the frames up to `until` (the feed's poller reads the log each second)."""
    seen: list[int] = []
    async with asyncio.timeout(15):
        while not seen or seen[-1] < until:
            run = await anext(runs)
            seen += [f.index for f in run or []]
    return seen


async def test_the_feed_stops_when_idle_and_a_later_subscriber_misses_nothing(
    store: EventStore, database_url: str, nats_url: str, js_fresh: object
) -> None:
    hub = StreamHub(Settings(database_url=database_url, nats_url=nats_url), store, idle=IDLE)
    try:
        first = _register(store, "n1")
        await hub.start()
        runs = hub.frames(Subscription({"*": {"*"}}, "*"), hub.after(0), heartbeat=5.0)
        second = _register(store, "n2", "n3")
        assert await _take(runs, second) == [first + 1, second]
        await runs.aclose()
        # Closed, then idle: the feed runs on until its idle time has passed, then stops.
        assert hub.running
        await asyncio.sleep(IDLE * 4)
        assert not hub.running and not hub.ring

        # Written while it was stopped, and read by a subscriber from an index before them.
        third = _register(store, "n4")
        runs = hub.frames(Subscription({"*": {"*"}}, "*"), hub.after(first), heartbeat=5.0)
        assert await _take(runs, third) == list(range(first, third + 1))
        assert hub.running
        # A stream open keeps it running past its idle time.
        await asyncio.sleep(IDLE * 4)
        assert hub.running
        await runs.aclose()
    finally:
        await hub.close()
