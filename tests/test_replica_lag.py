"""A replica's lag, as `GET /v1/metrics` shows it: how many events of the log it has yet to
apply."""

from __future__ import annotations

import asyncio
import time

from nats.js import JetStreamContext

from drover.model import Node
from drover.model.events import NodeRegistered
from drover.runtime.relay import Relay
from drover.runtime.replica import Replica
from drover.runtime.store import EventStore, libpq_url


async def test_lag_counts_the_events_of_the_log_a_busy_replica_has_not_applied(
    store: EventStore, database_url: str, js_fresh: JetStreamContext
) -> None:
    replica = Replica(store, js_fresh)
    await replica.start()
    assert replica._poller is not None
    replica._poller.cancel()  # only the stream feeds it
    assert await replica.lag() == 0
    store.append([NodeRegistered(node=Node(id=f"n{i}")) for i in range(5)])
    relay = Relay(store, js_fresh, libpq_url(database_url))
    deadline = time.monotonic() + 10
    async with replica._lock:  # the replica is busy: the first message waits on it
        await relay.pump()
        await asyncio.sleep(0.2)  # the messages arrive, and wait
        assert replica.position == 0
        assert await replica.lag() == 5
    while replica.position < 5:
        assert time.monotonic() < deadline, "the replica did not catch up"
        await asyncio.sleep(0.02)
    assert await replica.lag() == 0
