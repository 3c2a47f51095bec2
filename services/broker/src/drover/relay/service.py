"""`drover-relay`: publishes every committed event, in log order, onto the EVENTS stream
(drover.runtime.relay). Every consumer of the stream waits on it - the broker hears of a new
eval, a worker's replica reaches the eval's index - so it runs as a process of its own: in
the broker's it waited for the broker's event loop, busy following large plans, and the eval
of a small job registered under load was heard ~13 ms later for it. More than one may run:
a re-published event is dropped by the stream's duplicate window, and consumers skip
positions they have applied."""

from __future__ import annotations

import asyncio

from drover.runtime.bus import close, connect_streams
from drover.runtime.metrics import Metrics, published
from drover.runtime.relay import Relay
from drover.runtime.service import run_service
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, libpq_url


async def run(settings: Settings, stop: asyncio.Event) -> None:
    """The relay until `stop` (drover.runtime.relay)."""
    store = EventStore(settings.database(), pool_size=1)
    nc, js = await connect_streams(settings.nats_url, "relay", settings.nats_credentials())
    try:
        # The server's own limit: larger events go out without their body.
        max_body = nc.max_payload - 64 * 1024
        relay = Relay(store, js, libpq_url(settings.database()), max_body=max_body)
        metrics = Metrics("relay")

        async def collect(f: Metrics) -> None:
            # The log's head read when the metrics are taken (every few seconds), not per event.
            head = await asyncio.to_thread(store.last_position)
            f.gauge("relay.position", relay.position)
            f.gauge("relay.lag", max(0, head - relay.position))

        metrics.collectors.append(collect)
        async with published(metrics, js, stop):
            await relay.run(stop)
    finally:
        await close(nc)
        store.close()


def main() -> None:
    """`drover-relay`."""
    run_service("relay", run)
