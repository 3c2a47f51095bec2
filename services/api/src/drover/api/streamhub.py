"""The event stream's one feed: a replica of the cluster fed by EVENTS (one ordered consumer,
gaps and events too large for NATS read from the log, as every replica does) turns each log
position into Nomad's stream events once, and hands them to every subscriber.

A subscriber from an older index is served from the log first, replayed into a state of its own
from the log's start (the documents as they were then), until it meets the feed: the feed keeps
its last positions (`RING`), and a subscriber joins it only once it has every position before
them, so nothing is missed or sent twice. Live subscribers cost the database nothing.

The feed is a whole replica, applying every event the cluster makes: it stops once no stream
has been open for `idle` seconds, and the next subscriber starts it again from the projections.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from nats.aio.client import Client

from drover.api.streamgzip import Piece, piece
from drover.model.changes import TrackedState
from drover.model.events import EVENT_TYPES, Event, decode_event
from drover.model.reducer import apply
from drover.model.streamevents import ALL, matches, stream_event_texts
from drover.runtime import bus
from drover.runtime.replica import Replica
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore

log = logging.getLogger("drover.api.events")

# Log positions the feed keeps for subscribers joining it.
RING = 1024
READ_BATCH = 1000
# Frames sent to a subscriber in one write when they wait together: a run stops once it holds
# this many bytes. Joining them costs a copy, made once for every subscriber sent the same run
# (RunLines); a write per frame costs a system call per subscriber.
RUN_BYTES = 4 * 1024 * 1024
# Nomad's words for a subscription the server closed: the client subscribes again (from its
# last index, with Drover, and misses nothing).
CLOSED = "subscription closed by server, client must reset state and resubscribe"
# The events after which every subscription's ACL check is made again.
ACL_EVENTS = frozenset(name for name in EVENT_TYPES if name.startswith("ACL"))


@dataclass(frozen=True)
class Frame:
    """One log position as stream events, each with its JSON, and the frame's line whole.
    `lines` keeps the line each kind of subscription gets, worked out by its first subscriber:
    subscribers asking the same (most of them, `*`) cost one match of the frame, not one each."""

    index: int
    events: list[tuple[dict[str, Any], bytes]]
    line: bytes = b""
    lines: dict[Hashable, bytes | None] = field(default_factory=dict, compare=False)
    # The same, compressed for the subscribers that take gzip (drover.api.streamgzip).
    pieces: dict[Hashable, Piece | None] = field(default_factory=dict, compare=False)
    # The topics each kind of console subscription finds in it (drover.api.ui.live).
    hits: dict[Hashable, frozenset[str]] = field(default_factory=dict, compare=False)


def frame(index: int, texts: list[tuple[dict[str, Any], bytes]]) -> Frame:
    return Frame(index, texts, _line(index, [t for _, t in texts]))


def _line(index: int, texts: list[bytes]) -> bytes:
    """The frame's line, in one copy of its events (a 1,000-alloc frame is a megabyte)."""
    head = b'{"Index":%d,"Events":[' % index
    if not texts:
        return head + b"]}\n"
    if len(texts) == 1:
        return b"".join((head, texts[0], b"]}\n"))
    return b",".join([head + texts[0], *texts[1:-1], texts[-1] + b"]}\n"])


def describe(state: TrackedState, position: int, event: Event) -> Frame:
    """Apply `event` to `state` and answer its frame."""
    try:
        events = stream_event_texts(state, position, event)
    except Exception:
        # The state must still follow the log; the position goes out without its events.
        log.exception("no stream events for %s at %d", event.type, position)
        if state.index < position:
            apply(state, position, event)
        events = []
    return frame(position, events)


@dataclass(eq=False)
class Subscription:
    """What one connection asked for, and its bounded share of the feed."""

    topics: dict[str, set[str]]
    namespace: str
    # Frames (log positions) it may fall behind by before its stream is closed.
    buffer: int = 4096
    # With ACLs: the namespaces a `*` subscription is bound to (None: as asked), and its check,
    # made again after an ACL change (drover.api.streamacl); `acl_version` is the hub's at the
    # last check, `revoked` set when one fails.
    namespaces: frozenset[str] | None = None
    authorize: Callable[[], Awaitable[bool]] | None = None
    acl_version: int = 0
    queue: asyncio.Queue[Frame] = field(init=False)
    overflowed: bool = False
    revoked: bool = False

    def __post_init__(self) -> None:
        self.queue = asyncio.Queue(self.buffer)
        bound = tuple(sorted(self.namespaces)) if self.namespaces is not None else None
        self.key = (
            self.namespace,
            bound,
            tuple(sorted((t, tuple(sorted(k))) for t, k in self.topics.items())),
        )
        # Every topic, key and namespace: every frame whole, nothing to match.
        self.everything = self.namespace == ALL and ALL in self.topics.get(ALL, set()) and bound is None

    def _within(self, event: dict[str, Any]) -> bool:
        ns = event["Namespace"]
        return self.namespaces is None or not ns or ns in self.namespaces

    def encode(self, f: Frame) -> bytes | None:
        """The frame's line for this subscriber, None if none of its events is for it."""
        if self.everything:
            return f.line if f.events else None
        if self.key in f.lines:
            return f.lines[self.key]
        picked = [
            text
            for event, text in f.events
            if matches(event, self.topics, self.namespace) and self._within(event)
        ]
        # Every event for it (most frames, for most subscribers): the line built once for all.
        line = None if not picked else f.line if len(picked) == len(f.events) else _line(f.index, picked)
        f.lines[self.key] = line
        return line

    def piece(self, f: Frame) -> Piece | None:
        """`encode`'s line compressed, once for every subscriber asking the same."""
        if self.key in f.pieces:
            return f.pieces[self.key]
        line = self.encode(f)
        p = f.pieces[self.key] = None if line is None else piece(line)
        return p


class RunLines:
    """Each run's lines joined once for every subscriber sent the same run: subscribers in step
    with the feed are handed the same frames together, so each writes the same bytes object
    rather than a copy of its own (a run is up to RUN_BYTES). The newest `size` are kept."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._joined: dict[tuple[Hashable, int, int, int], bytes | None] = {}

    def line(self, sub: Subscription, run: list[Frame]) -> bytes | None:
        """The run's lines for `sub` in one bytes object, None if none is for it."""
        if len(run) == 1:
            return sub.encode(run[0])
        key = (sub.key, run[0].index, run[-1].index, len(run))
        if key in self._joined:
            return self._joined[key]
        picked = [line for f in run if (line := sub.encode(f)) is not None]
        joined = None if not picked else picked[0] if len(picked) == 1 else b"".join(picked)
        self._joined[key] = joined
        if len(self._joined) > self.size:
            del self._joined[next(iter(self._joined))]
        return joined


class _FeedReplica(Replica):
    """The replica under the feed: each event applied is also described as stream events."""

    def __init__(self, store: EventStore, js: Any, hub: StreamHub) -> None:
        super().__init__(store, js)
        self.hub = hub

    def new_state(self) -> TrackedState:
        return TrackedState(drop_metrics=True, owns_events=True)

    def reduce(self, position: int, event: Event) -> None:
        assert isinstance(self.state, TrackedState)
        if event.type in ACL_EVENTS:
            self.hub.acl_version += 1
        self.hub.publish(describe(self.state, position, event))


class StreamHub:
    """Started by the first subscriber; one NATS connection and one replica for all, stopped
    `idle` seconds after the last stream ends."""

    def __init__(
        self, settings: Settings, store: EventStore, idle: float = 60.0, coalesce: float = 0.0
    ) -> None:
        self.settings = settings
        self.store = store
        self.idle = idle
        self.coalesce = coalesce
        self.ring: deque[Frame] = deque(maxlen=RING)
        self.runs = RunLines()
        # Frames published but not yet handed to the subscribers (within `coalesce` of the first).
        self._pending: list[Frame] = []
        self._delivering: asyncio.TimerHandle | None = None
        self.subscribers: set[Subscription] = set()
        self.closing = asyncio.Event()
        self._nc: Client | None = None
        self._replica: _FeedReplica | None = None
        self._starting = asyncio.Lock()
        self._streams = 0
        self._stopping: asyncio.TimerHandle | None = None
        self._stop_task: asyncio.Future[None] | None = None
        # ACL changes the feed has applied: a subscription checked before one is checked again.
        self.acl_version = 0

    @property
    def position(self) -> int:
        return self._replica.position if self._replica is not None else 0

    @property
    def running(self) -> bool:
        return self._replica is not None

    async def start(self) -> None:
        async with self._starting:
            if self._replica is not None:
                return
            nc = await bus.connect(self.settings.nats_url, "api-events", self.settings.nats_credentials())
            try:
                replica = _FeedReplica(self.store, nc.jetstream(), self)
                await replica.start()
            except BaseException:
                await bus.close(nc)
                raise
            self._nc, self._replica = nc, replica

    def publish(self, f: Frame) -> None:
        """Keep `f` for subscribers joining, and hand it to every subscriber together with the
        frames published within `coalesce` seconds of the first still waiting: each subscriber
        then wakes, and writes, once for them all rather than once a frame (the feed gives the
        loop a turn between log positions). A joiner meanwhile takes them from the ring."""
        self.ring.append(f)
        self._pending.append(f)
        if self.coalesce <= 0:
            self._deliver()
        elif self._delivering is None:
            self._delivering = asyncio.get_running_loop().call_later(self.coalesce, self._deliver)

    def _deliver(self) -> None:
        self._delivering = None
        pending, self._pending = self._pending, []
        for sub in list(self.subscribers):
            try:
                for f in pending:
                    sub.queue.put_nowait(f)
            except asyncio.QueueFull:
                sub.overflowed = True
                self.subscribers.discard(sub)

    def release(self) -> None:
        """End every stream (the API is stopping): each is woken by an empty frame."""
        self.closing.set()
        for sub in self.subscribers:
            with contextlib.suppress(asyncio.QueueFull):
                sub.queue.put_nowait(Frame(0, []))

    async def close(self) -> None:
        self.release()
        if self._stopping is not None:
            self._stopping.cancel()
        if self._delivering is not None:
            self._delivering.cancel()
        if self._nc is not None:
            await bus.close(self._nc)

    def _opened(self) -> None:
        self._streams += 1
        if self._stopping is not None:
            self._stopping.cancel()
            self._stopping = None

    def _closed(self) -> None:
        self._streams -= 1
        if not self._streams and self._replica is not None and not self.closing.is_set():
            self._stopping = asyncio.get_running_loop().call_later(self.idle, self._stop_soon)

    def _stop_soon(self) -> None:
        self._stopping = None
        self._stop_task = asyncio.ensure_future(self._stop_if_idle())  # held: a task is weakly kept

    async def _stop_if_idle(self) -> None:
        """Stop the feed if no stream opened since it was scheduled: its replica would otherwise
        apply every event of the cluster for nobody."""
        async with self._starting:
            if self._streams or self._replica is None or self.closing.is_set():
                return  # a stream opened meanwhile, or the API is stopping (close() ends it)
            replica, nc = self._replica, self._nc
            self._replica = self._nc = None
            self.ring.clear()
            if self._delivering is not None:
                self._delivering.cancel()
            self._deliver()  # to nobody: the list emptied
            replica.stop()
            if nc is not None:
                await bus.close(nc)
            log.info("event feed stopped at %d: no subscriber for %.0f s", replica.position, self.idle)

    def _join(self, sub: Subscription, sent: int) -> list[Frame] | None:
        """Join the feed after position `sent`: the ring's frames past it, or None if the ring
        no longer holds every one (no await here: nothing is published in between)."""
        if sent >= self.position:
            self.subscribers.add(sub)
            return []
        if not self.ring or self.ring[0].index > sent + 1:
            return None
        self.subscribers.add(sub)
        return [f for f in self.ring if f.index > sent]

    async def _allowed(self, sub: Subscription) -> bool:
        """Whether `sub` may go on: its ACL check made again if an ACL token or policy changed
        since it was last made (a refusal closes the stream, `revoked`)."""
        if sub.authorize is None or sub.acl_version == self.acl_version:
            return True
        sub.acl_version = self.acl_version
        if await sub.authorize():
            return True
        sub.revoked = True
        return False

    def after(self, index: int) -> int:
        """The position a subscription from `index` starts after (0: the feed's, now)."""
        return self.position if index <= 0 else index - 1

    async def frames(
        self, sub: Subscription, sent: int, heartbeat: float, *, replay_log: bool = True
    ) -> AsyncGenerator[list[Frame] | None]:
        """Every frame after position `sent`, in order, each once: from the log until the feed
        is reached, then the feed's; None when `heartbeat` seconds pass without one. Frames come
        in runs: those already waiting go out together (one write to the socket, not one each).
        Ends when the subscriber falls its buffer behind, or the API stops.

        Without `replay_log`, positions the ring no longer holds are skipped rather than read
        from the log (which replays it from its start): the subscriber joins the feed where it
        is, told so by an empty run first (the console refreshes what it shows instead)."""
        replay: _Replay | None = None
        self._opened()
        try:
            # The feed may have stopped, idle, since the request started it: it starts again.
            await self.start()
            if not replay_log and self._join(sub, sent) is None:
                sent = self.position
                self.subscribers.add(sub)
                yield []
            while (backlog := self._join(sub, sent)) is None:
                replay = replay or _Replay(self.store)
                for run in _runs(await replay.until(sent, self.position)):
                    if not await self._allowed(sub):
                        return
                    sent = run[-1].index
                    yield run
            for run in _runs(backlog):
                if not await self._allowed(sub):
                    return
                sent = run[-1].index
                yield run
            while not sub.overflowed and not self.closing.is_set():
                try:
                    waiting = [await _next(sub.queue, heartbeat)]
                except TimeoutError:
                    if not await self._allowed(sub):
                        return
                    yield None
                    continue
                size = len(waiting[0].line)
                while size < RUN_BYTES and not sub.queue.empty():
                    waiting.append(sub.queue.get_nowait())
                    size += len(waiting[-1].line)
                if not await self._allowed(sub):
                    return
                if run := [f for f in waiting if f.index > sent]:
                    sent = run[-1].index
                    yield run
        finally:
            self.subscribers.discard(sub)
            self._closed()


def _runs(frames: list[Frame]) -> list[list[Frame]]:
    """`frames` in runs of at most RUN_BYTES (a larger frame alone)."""
    runs: list[list[Frame]] = []
    size = 0
    for f in frames:
        if not runs or size + len(f.line) > RUN_BYTES:
            runs.append([])
            size = 0
        runs[-1].append(f)
        size += len(f.line)
    return runs


async def _next(queue: asyncio.Queue[Frame], timeout: float) -> Frame:
    """The queue's next frame; a frame already there is taken without arming a timer (a
    subscriber behind the feed, or a burst, takes many)."""
    try:
        return queue.get_nowait()
    except asyncio.QueueEmpty:
        async with asyncio.timeout(timeout):
            return await queue.get()


class _Replay:
    """A subscriber's own replay of the log from its start, for positions the feed has
    passed: the state as it was at each position, for the documents of that time."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.state = TrackedState(drop_metrics=True, owns_events=True)

    async def until(self, sent: int, target: int) -> list[Frame]:
        """The frames after `sent`, one batch of the log toward `target`."""
        return await asyncio.to_thread(self._read, sent, target)

    def _read(self, sent: int, target: int) -> list[Frame]:
        out: list[Frame] = []
        rows = self.store.read(self.state.index, READ_BATCH, replica=_decode)
        for r in rows:
            if r.position != self.state.index + 1:
                break
            if r.position <= sent:
                apply(self.state, r.position, r.event)  # before the subscriber's index: state only
            else:
                out.append(describe(self.state, r.position, r.event))
        if not rows and self.state.index < target:
            raise RuntimeError(f"the log ends at {self.state.index}, before position {target}")
        return out


def _decode(data: str) -> Event:
    return decode_event(data, replica=True)
