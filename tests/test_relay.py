"""The relay publishes every committed event to JetStream in log order, exactly once, across
restarts of the relay."""

from __future__ import annotations

import asyncio
import time

from nats.js import JetStreamContext

from drover.model import Node
from drover.model.events import NodeRegistered, NodeStatusUpdated
from drover.runtime.bus import BODY_HEADER, BODY_IN_LOG, EVENTS_STREAM, position_of
from drover.runtime.relay import Relay
from drover.runtime.replica import Replica
from drover.runtime.store import EventStore, libpq_url


async def positions_in_stream(js: JetStreamContext) -> list[int]:
    info = await js.stream_info(EVENTS_STREAM)
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await js.get_msg(EVENTS_STREAM, seq=seq)
        out.append(position_of(msg.headers))
    return out


async def run_until(relay: Relay, js: JetStreamContext, want: int, timeout: float = 10.0) -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(relay.run(stop))
    try:
        deadline = asyncio.get_running_loop().time() + timeout
        while (await js.stream_info(EVENTS_STREAM)).state.messages < want:
            assert asyncio.get_running_loop().time() < deadline, "relay did not catch up"
            await asyncio.sleep(0.02)
    finally:
        stop.set()
        await task


async def test_relay_in_order_once_across_restarts(
    store: EventStore, database_url: str, js_fresh: JetStreamContext
) -> None:
    js = js_fresh
    store.append([NodeRegistered(node=Node(id=f"n{i}")) for i in range(50)])
    await run_until(Relay(store, js, libpq_url(database_url), batch=7), js, 50)
    # A new relay (a restart) resumes after the last relayed position: no duplicates.
    store.append([NodeStatusUpdated(node_id="n1", status="down") for _ in range(20)])
    await run_until(Relay(store, js, libpq_url(database_url)), js, 70)
    assert await positions_in_stream(js) == list(range(1, 71))


async def test_republish_is_deduplicated(
    store: EventStore, database_url: str, js_fresh: JetStreamContext
) -> None:
    js = js_fresh
    store.append([NodeRegistered(node=Node(id=f"n{i}")) for i in range(5)])
    relay = Relay(store, js, libpq_url(database_url))
    await relay.pump()
    relay.position = 0  # as if it crashed before recording where it was
    await relay.pump()
    assert await positions_in_stream(js) == [1, 2, 3, 4, 5]


async def test_relay_wakes_on_commit(
    store: EventStore, database_url: str, js_fresh: JetStreamContext
) -> None:
    js = js_fresh
    relay = Relay(store, js, libpq_url(database_url))
    stop = asyncio.Event()
    task = asyncio.create_task(relay.run(stop, poll=5.0))  # a long poll: only NOTIFY can be quick
    await asyncio.sleep(0.3)
    t0 = asyncio.get_running_loop().time()
    store.append([NodeRegistered(node=Node(id="x"))])
    while (await js.stream_info(EVENTS_STREAM)).state.messages < 1:
        await asyncio.sleep(0.005)
    elapsed = asyncio.get_running_loop().time() - t0
    stop.set()
    await task
    assert elapsed < 1.0


class CommitsDuringAnEmptyRead(EventStore):
    """A real store whose next read that finds nothing is followed, before it returns, by a
    real commit: its NOTIFY arrives while the relay is still in that read."""

    armed = False

    def read_raw(self, after: int = 0, limit: int = 1000) -> list[tuple[int, str, str, dict[str, object]]]:
        rows = super().read_raw(after, limit)
        if self.armed and not rows:
            self.armed = False
            self.append([NodeRegistered(node=Node(id="late"))])
            time.sleep(0.2)  # the relay's loop takes the NOTIFY in before this read returns
        return rows


async def test_a_commit_notified_during_an_empty_read_is_relayed_at_once(
    database_url: str, js_fresh: JetStreamContext
) -> None:
    store = CommitsDuringAnEmptyRead(database_url)
    relay = Relay(store, js_fresh, libpq_url(database_url))
    stop = asyncio.Event()
    task = asyncio.create_task(relay.run(stop, poll=5.0))  # a long poll: only the NOTIFY is quick
    try:
        await asyncio.sleep(0.3)
        t0 = asyncio.get_running_loop().time()
        store.armed = True
        relay._wake.set()  # the next pass reads, finds nothing, and the commit lands meanwhile
        while (await js_fresh.stream_info(EVENTS_STREAM)).state.messages < 1:
            assert asyncio.get_running_loop().time() - t0 < 3.0, "the NOTIFY was dropped"
            await asyncio.sleep(0.005)
        assert asyncio.get_running_loop().time() - t0 < 1.0
    finally:
        stop.set()
        await task
        store.close()


async def test_an_event_too_large_for_nats_goes_by_the_log(
    store: EventStore, database_url: str, js_fresh: JetStreamContext
) -> None:
    """An event over NATS's max_payload is relayed without its body (the relay would otherwise
    stall on it), and a replica reads it from the log, in order with the events around it."""
    js = js_fresh
    big = Node(id="big", meta={"blob": "x" * (2 * 1024 * 1024)})
    store.append([NodeRegistered(node=Node(id="before"))])
    store.append([NodeRegistered(node=big)])
    store.append([NodeRegistered(node=Node(id="after"))])
    replica = Replica(store, js)
    await replica.start()
    assert replica._poller is not None and replica.position == 3
    replica._poller.cancel()  # only the stream feeds it from here
    store.append([NodeRegistered(node=Node(id="next"))])
    store.append([NodeRegistered(node=big.model_copy(update={"id": "big2"}))])
    stop = asyncio.Event()
    task = asyncio.create_task(Relay(store, js, libpq_url(database_url)).run(stop))
    try:
        deadline = time.monotonic() + 10
        while (await js.stream_info(EVENTS_STREAM)).state.messages < 5:
            assert time.monotonic() < deadline, "the relay stalled"
            await asyncio.sleep(0.02)
        while replica.position < 5:  # (not wait_for: past its timeout it reads the log itself)
            assert time.monotonic() < deadline, "the replica did not apply the large event"
            await asyncio.sleep(0.02)
    finally:
        stop.set()
        await task
    first = (await js.stream_info(EVENTS_STREAM)).state.first_seq
    msg = await js.get_msg(EVENTS_STREAM, seq=first + 4)
    assert msg.headers is not None and msg.headers[BODY_HEADER] == BODY_IN_LOG and not msg.data
    assert await positions_in_stream(js) == [1, 2, 3, 4, 5]
    node = replica.state.node("big2")
    assert node is not None and node.meta["blob"] == big.meta["blob"]
    assert replica.state.node("next") is not None
