"""A service's in-memory replica of the cluster: bootstrapped from the projections at a known
log position, then fed by the EVENTS stream through the one reducer.

Gaps are impossible to miss: every message carries its log position; a message further ahead
than the next position makes the replica read the missing range from the log itself first, and
one at or below the replica's position is a duplicate and is skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy
from sqlalchemy import Connection, text

from drover.model.alloc import ReplicaAllocation
from drover.model.deployment import Deployment
from drover.model.evaluation import Evaluation
from drover.model.events import Event, decode_event
from drover.model.job import Job
from drover.model.node import Node
from drover.model.reducer import apply
from drover.model.state import InMemoryState
from drover.runtime.bus import EVENTS_SUBJECT_PREFIX, position_of
from drover.runtime.store import EventStore

log = logging.getLogger("drover.replica")

# Called with (position, event, metadata) for every event the replica applies.
Listener = Callable[[int, Event, dict[str, Any]], None]


S = TypeVar("S", bound=InMemoryState)


def _alloc_documents(conn: Connection, state: InMemoryState) -> None:
    # Streamed (a server-side cursor) rather than fetched whole: a million allocs' documents
    # would otherwise sit in memory as text while being decoded.
    allocs = text("SELECT doc::text FROM allocs").execution_options(stream_results=True, yield_per=2000)
    for (doc,) in conn.execute(allocs):
        state.upsert_alloc(ReplicaAllocation.model_validate_json(doc))


def load_snapshot(store: EventStore) -> InMemoryState:
    """The projections as one consistent snapshot, at the log position they reflect."""
    return load_into(store, InMemoryState(drop_metrics=True, owns_events=True), _alloc_documents)


def load_into(store: EventStore, state: S, load_allocs: Callable[[Connection, S], None]) -> S:
    """`load_snapshot` into `state`, its allocs read by `load_allocs` (a leaner replica reads
    them its own way)."""
    with store.engine.connect() as conn:
        conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        position = int(conn.exec_driver_sql("SELECT coalesce(max(position), 0) FROM events").scalar_one())
        for (doc,) in conn.execute(text("SELECT doc::text FROM nodes")):
            state.upsert_node(Node.model_validate_json(doc))
        for (doc,) in conn.execute(text("SELECT doc::text FROM job_versions ORDER BY version")):
            state.upsert_job(Job.model_validate_json(doc))
        for (doc,) in conn.execute(text("SELECT doc::text FROM jobs")):
            state.upsert_job(Job.model_validate_json(doc))
        for (doc,) in conn.execute(text("SELECT doc::text FROM deployments ORDER BY create_index")):
            state.upsert_deployment(Deployment.model_validate_json(doc))
        for (doc,) in conn.execute(text("SELECT doc::text FROM evals")):
            state.upsert_eval(Evaluation.model_validate_json(doc))
        load_allocs(conn, state)
    state.bump(position)
    return state


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

    # What a replica keeps and how (a replica that keeps less overrides these four).
    def new_state(self) -> InMemoryState:
        return InMemoryState(drop_metrics=True, owns_events=True)

    def load(self) -> InMemoryState:
        """The state from the projections, at the log position they reflect."""
        return load_snapshot(self.store)

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
            if pos == self.position + 1:
                self._apply(pos, self.decode(msg.data), dict(msg.headers or {}))
        await self._notify()
        # Give the loop a turn between messages. The subscription's callbacks otherwise run
        # back to back for as long as messages are queued (nothing in them waits), and what a
        # message woke (a worker's eval waiting for this index, the broker's dispatch) waits for
        # the rest of a backlog of large plans. Under the pipeline benchmark's load: count-10
        # p50 lower in 3 interleaved pairs of 3 (28-32 against 31-55 ms).
        await asyncio.sleep(0)

    def _apply(self, pos: int, ev: Event, meta: dict[str, Any] | None = None) -> None:
        self.reduce(pos, ev)
        for fn in self.listeners:
            try:
                fn(pos, ev, meta or {})
            except Exception:
                log.exception("replica listener failed on %s at %d", ev.type, pos)

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
            for pos, ev in recorded:
                if pos <= self.position:
                    continue
                if pos > self.position + 1:
                    await self._fetch_until(pos - 1)
                if pos == self.position + 1:
                    self._apply(pos, ev)
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
