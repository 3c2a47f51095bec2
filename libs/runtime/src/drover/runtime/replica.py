"""A service's in-memory replica of the cluster: bootstrapped from the projections at a known
log position, then fed by the EVENTS stream through the one reducer.

Gaps are impossible to miss: every message carries its log position; a message further ahead
than the next position makes the replica read the missing range from the log itself first, and
one at or below the replica's position is a duplicate and is skipped. An event too large for a
NATS message arrives without its body and is read from the log too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy
from sqlalchemy import Connection

from drover.model.brokerstate import AllocRecord, BrokerState, apply_for_broker, decode_for_broker
from drover.model.events import Event, decode_event
from drover.model.reducer import apply
from drover.model.state import InMemoryState
from drover.runtime.bus import BODY_HEADER, BODY_IN_LOG, EVENTS_SUBJECT_PREFIX, position_of
from drover.runtime.store import EventStore
from drover.runtime.store.queries import alloc_documents, alloc_records, load_into

log = logging.getLogger("drover.replica")

# Called with (position, event, metadata) for every event the replica applies.
Listener = Callable[[int, Event, dict[str, Any]], None]


class Replica:
    def __init__(self, store: EventStore, js: JetStreamContext) -> None:
        self.store = store
        self.js = js
        self.state = self.new_state()
        self.listeners: list[Listener] = []
        self._advanced = asyncio.Condition()
        self._buffer: list[Msg] = []
        self._ready = False
        self._lock = asyncio.Lock()
        self._poller: asyncio.Task[None] | None = None

    @property
    def position(self) -> int:
        return self.state.index

    async def lag(self) -> int:
        """How many events of the log the replica has yet to apply, the log's head read now
        (for metrics, every few seconds: nothing is added per event). A message's pending
        count would not do: it counts what the stream held when the message was sent."""
        head = await asyncio.to_thread(self.store.last_position)
        return max(0, head - self.position)

    # What a replica keeps and how (a replica that keeps less overrides these four).
    def new_state(self) -> InMemoryState:
        return InMemoryState(drop_metrics=True, owns_events=True)

    def load(self) -> InMemoryState:
        """The state from the projections, at the log position they reflect."""
        return load_into(self.store, self.new_state(), alloc_documents)

    def decode(self, data: bytes | str) -> Event:
        return decode_event(data, replica=True)

    def reduce(self, position: int, event: Event) -> None:
        apply(self.state, position, event)

    async def start(self) -> None:
        # Subscribe before taking the snapshot: whatever commits in between arrives on the
        # subscription (or is fetched as a gap), never lost.
        await self.js.subscribe(
            EVENTS_SUBJECT_PREFIX + ">",
            cb=self._on_msg,
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.NEW,
        )
        self.state = await asyncio.to_thread(self.load)
        self._ready = True
        buffered, self._buffer = self._buffer, []
        for msg in buffered:
            await self._on_msg(msg)
        await self.catch_up()
        self._poller = asyncio.create_task(self._poll())

    def stop(self) -> None:
        """Stop following the log from Postgres (its subscription ends with its connection)."""
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None

    async def _poll(self, every: float = 1.0) -> None:
        """A safety net under the subscription: if NATS is away or the consumer stalled, the
        replica still follows the log, read from Postgres, within a second."""
        while True:
            await asyncio.sleep(every)
            try:
                await self.catch_up()
            except Exception as e:
                log.warning("replica catch-up from the log failed: %s", e)

    async def _on_msg(self, msg: Msg) -> None:
        if not self._ready:
            self._buffer.append(msg)
            return
        pos = position_of(msg.headers)
        if pos <= self.position:
            return
        async with self._lock:
            if pos > self.position + 1:
                await self._fetch_until(pos - 1)
            if pos == self.position + 1 and (msg.headers or {}).get(BODY_HEADER) == BODY_IN_LOG:
                await self._fetch_until(pos)  # too large for NATS: read from the log
            elif pos == self.position + 1:
                self._apply(pos, self.decode(msg.data), dict(msg.headers or {}))
        await self._notify()
        # Give the loop a turn between messages. The subscription's callbacks otherwise run
        # back to back for as long as messages are queued (nothing in them waits), and what a
        # message woke (a worker's eval waiting for this index, the broker's dispatch) waits for
        # the rest of a backlog of large plans. Under the pipeline benchmark's load: count-10
        # p50 lower in 3 interleaved pairs of 3 (28-32 against 31-55 ms).
        await asyncio.sleep(0)

    def _apply(self, pos: int, event: Event, meta: dict[str, Any] | None = None) -> None:
        self.reduce(pos, event)
        for fn in self.listeners:
            try:
                fn(pos, event, meta or {})
            except Exception:
                log.exception("replica listener failed on %s at %d", event.type, pos)

    async def _fetch_until(self, target: int | None) -> None:
        while target is None or self.position < target:
            rows = await asyncio.to_thread(self.store.read, self.position, 1000, replica=self.decode)
            if not rows:
                return
            for r in rows:
                if r.position == self.position + 1 and (target is None or r.position <= target):
                    self._apply(r.position, r.event, r.metadata)
            if target is None and len(rows) < 1000:
                return

    async def apply_recorded(self, recorded: list[tuple[int, Event]]) -> None:
        """Apply events this process just appended itself (the plan applier must see its own
        commits before the next plan), filling any gap before them from the log."""
        async with self._lock:
            for pos, event in recorded:
                if pos <= self.position:
                    continue
                if pos > self.position + 1:
                    await self._fetch_until(pos - 1)
                if pos == self.position + 1:
                    self._apply(pos, event)
        await self._notify()

    async def _notify(self) -> None:
        async with self._advanced:
            self._advanced.notify_all()

    async def catch_up(self) -> None:
        """Read whatever the log has beyond the replica's position, straight from Postgres."""
        async with self._lock:
            await self._fetch_until(None)
        await self._notify()

    async def wait_for(self, index: int, timeout: float = 5.0) -> bool:
        """Wait until the replica has applied `index`; past `timeout`, read the log directly."""
        if self.position >= index:
            return True
        with contextlib.suppress(TimeoutError):
            async with self._advanced:
                await asyncio.wait_for(self._advanced.wait_for(lambda: self.position >= index), timeout)
        if self.position < index:
            await self.catch_up()
        return self.position >= index


def _alloc_records(conn: Connection, state: BrokerState) -> None:
    for alloc_id, namespace, job_id, node_id, desired, client in alloc_records(conn):
        state.put(alloc_id, AllocRecord((namespace, job_id), node_id, desired, client))


def load_broker_snapshot(store: EventStore) -> BrokerState:
    """The projections as the broker keeps them, in one snapshot at the position they reflect."""
    return load_into(store, BrokerState(), _alloc_records)


class BrokerReplica(Replica):
    """A replica that keeps a `BrokerState`."""

    state: BrokerState

    def new_state(self) -> BrokerState:
        return BrokerState()

    def load(self) -> BrokerState:
        return load_broker_snapshot(self.store)

    def decode(self, data: bytes | str) -> Event:
        return decode_for_broker(data)

    def reduce(self, position: int, event: Event) -> None:
        apply_for_broker(self.state, position, event)
