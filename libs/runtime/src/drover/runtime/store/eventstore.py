"""The append-only event log in PostgreSQL.

Appends take one transaction-level advisory lock (`EVENTS_LOCK`) and hold it until they commit
(readers are not blocked). Positions are assigned under that lock, so transactions commit in
position order and a reader tailing `position > last` can never skip one that commits late -
the gap a bare bigserial leaves (see design notes). A large append inserts its event rows
before the lock, at staging positions, and only numbers them under it. The projections are
written in the same transaction through the one reducer, and a leader may pass its lease epoch
so that a deposed leader's append is refused by the database itself (fencing).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from sqlalchemy import URL, Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError

from drover.model.events import (
    Event,
    NewEvent,
    PlanApplied,
    decode_event,
    encode_event_parts,
)
from drover.model.reducer import apply
from drover.model.state import InMemoryState
from drover.runtime.store.prefetch import prefetch_query, reads_of
from drover.runtime.store.projections import PROJECTION_TABLES, SqlState, Statement
from drover.runtime.store.statements import (
    EVENTS_LOCK,
    FENCE,
    insert_events_sql,
    number_staged_sql,
    stage_events_sql,
)
from drover.runtime.watches import notify_payloads

# The append transaction notifies this channel (delivered at commit) so tailers wake at once;
# the payloads name the position and what changed (drover.runtime.watches).
NOTIFY_CHANNEL = "drover_events"
# The log's last position: the cluster's index (X-Nomad-Index).
LAST_POSITION = "SELECT coalesce(max(position), 0) FROM events"
# Placements in one append from which new ones are not looked up: below it, the one lookup
# query costs less than the savepoint that guards the shortcut.
TRUST_NEW_FROM = 64
# Appends of at least this many stored bytes insert their events before the lock, at staging
# positions, and only number them under it (`stage_events_sql`).
STAGE_FROM = 32 * 1024


EVENTS_PER_INSERT = 5000
# Seconds a pooled connection may sit idle before it is checked at checkout (see below).
PING_AFTER_IDLE = 1.0


class ConcurrencyError(Exception):
    """A stream was not at the version the caller expected; re-read and retry."""


class FencedError(Exception):
    """The caller's lease epoch is no longer current: it is not the leader any more."""


def libpq_url(url: str | URL) -> str:
    """A SQLAlchemy URL (postgresql+psycopg://...) as plain libpq conninfo, its password in it:
    for psycopg's connect alone, never to be printed (a URL object prints `***`).

    A URL naming several servers (SQLAlchemy's `?host=h1:p1&host=h2:p2`, with
    `target_session_attrs=read-write`: a primary and its standby) becomes libpq's key/value
    form, `host=h1,h2 port=p1,p2`, which libpq tries in turn for the one that takes writes."""
    parsed = make_url(url) if isinstance(url, str) else url
    hosts = parsed.query.get("host")
    if parsed.host or not isinstance(hosts, tuple):
        if isinstance(url, URL):
            return url.set(drivername="postgresql").render_as_string(hide_password=False)
        return url.replace("postgresql+psycopg://", "postgresql://", 1)
    names, ports = zip(*(h.rpartition(":")[::2] if ":" in h else (h, "5432") for h in hosts), strict=True)
    params: dict[str, Any] = {k: v for k, v in parsed.query.items() if k != "host"}
    params.update(host=",".join(names), port=",".join(ports), dbname=parsed.database, user=parsed.username)
    if parsed.password:
        params["password"] = parsed.password
    return psycopg.conninfo.make_conninfo(**{k: v for k, v in params.items() if v})


@dataclass
class RecordedEvent:
    position: int
    stream: str
    version: int
    event: Event
    metadata: dict[str, Any]
    recorded_at: datetime | None = None


def _prefetch(state: SqlState, events: Sequence[Event], *, trust_new: bool = False) -> None:
    """Load what the events will read (drover.runtime.store.prefetch), in a round trip of its own."""
    reads = reads_of(events, trust_new=trust_new)
    query = prefetch_query(state, reads)
    if query is not None:
        query.take(state.fetch(*query.statement))
    state.assume_absent(reads.new)


def _project(
    state: SqlState,
    events: list[tuple[int, Event]],
    *,
    trust_new: bool = False,
    then: Sequence[Statement] = (),
) -> None:
    """Reduce `events` into the projections through `state` (one transaction's writer); the
    statements `then` go in the same round trip as the writes."""
    _prefetch(state, [e for _, e in events], trust_new=trust_new)
    for position, logged in events:
        apply(state, position, logged)
    state.flush(then)


def _insert_chunks(
    items: list[NewEvent], encoded: list[tuple[str, str | None, str]]
) -> list[tuple[list[int], list[str | None]]]:
    """The events' insert parameters in statements of at most EVENTS_PER_INSERT rows (Postgres
    takes 65,535 parameters), with which of its statement's events of that stream each is (each
    statement numbers its rows after what the ones before it wrote)."""
    chunks: list[tuple[list[int], list[str | None]]] = []
    for start in range(0, len(items), EVENTS_PER_INSERT):
        seen: dict[str, int] = {}
        nth: list[int] = []
        params: list[str | None] = []
        for item, (data, metrics, metadata) in zip(
            items[start : start + EVENTS_PER_INSERT], encoded[start : start + EVENTS_PER_INSERT], strict=True
        ):
            stream = item.event.stream()
            seen[stream] = seen.get(stream, 0) + 1
            nth.append(seen[stream])
            params += [stream, item.event.type, data, metrics, metadata]
        chunks.append((nth, params))
    return chunks


def _recorded(items: list[NewEvent], rows: list[Any]) -> list[RecordedEvent]:
    """The events at the positions and versions the server gave them; ConcurrencyError if a
    stream was not at the version its event expected."""
    recorded: list[RecordedEvent] = []
    for item, (position, version, _) in zip(items, rows, strict=True):
        stream = item.event.stream()
        if item.expected_version is not None and version - 1 != item.expected_version:
            raise ConcurrencyError(
                f"stream {stream} is at version {version - 1}, expected {item.expected_version}"
            )
        recorded.append(RecordedEvent(position, stream, version, item.event, item.metadata))
    return recorded


def _project_and_commit(state: SqlState, recorded: list[RecordedEvent], trust_new: bool) -> None:
    """Reduce the appended events into the projections and commit, in the writes' round trip:
    the connection is then idle, and the transaction's own commit has nothing left to do."""
    events = [(r.position, r.event) for r in recorded]
    # The notification names what changed, for blocking queries (drover.runtime.watches).
    last: list[Statement] = []
    try:
        for position, logged in events:
            apply(state, position, logged)
        last = [
            ("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, payload))
            for payload in notify_payloads(recorded[-1].position, *state.touched())
        ]
        last.append(("COMMIT", None))
        state.flush([("RELEASE SAVEPOINT trust_new", None), *last] if trust_new else last)
    except psycopg.errors.UniqueViolation:
        if not trust_new:
            raise
        # A placement taken as new exists after all: redo the projection with lookups.
        state.raw.execute("ROLLBACK TO SAVEPOINT trust_new")
        redo = SqlState(state.conn)
        redo.take_metrics([e for _, e in events])
        _project(redo, events, then=last)


def _ping_when_idle(engine: Engine) -> None:
    """Check a pooled connection (one round trip) before use only if it sat idle longer than
    PING_AFTER_IDLE: one Postgres dropped meanwhile (a restart) is replaced instead of failing
    its caller, and busy connections skip what would be a round trip on every operation."""

    @event.listens_for(engine, "checkin")
    def _checkin(dbapi_conn: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_conn: Any, record: Any, proxy: Any) -> None:
        since = record.info.get("idle_since")
        if since is not None and time.monotonic() - since > PING_AFTER_IDLE:
            try:
                engine.dialect.do_ping(dbapi_conn)
            except Exception as e:
                raise DisconnectionError from e  # the pool replaces it and checks out again


class EventStore:
    def __init__(self, url: str | URL, *, pool_size: int = 5, engine: Engine | None = None) -> None:
        if engine is None:
            engine = create_engine(url, pool_size=pool_size, max_overflow=10)
            _ping_when_idle(engine)
        self.engine = engine
        # Reads on the same pool without a transaction around them: no BEGIN and ROLLBACK round
        # trips around each query, which sees its own snapshot as under READ COMMITTED anyway.
        # Not for reads that need one snapshot across statements (load_snapshot).
        self.reader = engine.execution_options(isolation_level="AUTOCOMMIT")
        # Called after each append with how long it held the events lock, in seconds: from the
        # server's clock when its events were numbered (just after the lock was granted) to the
        # commit's return here. For benchmarks on one host (two hosts' clocks differ).
        self.lock_held: Callable[[float], None] | None = None

    def close(self) -> None:
        self.engine.dispose()

    # --- writing ---
    def append(
        self,
        events: Sequence[Event | NewEvent],
        *,
        fence: tuple[str, int] | None = None,
        owned: bool = False,
    ) -> list[RecordedEvent]:
        """Append `events` atomically, update the projections, return them with positions.
        `owned`: the caller hands its events over (their allocs may be filled in place)."""
        items = [e if isinstance(e, NewEvent) else NewEvent(e) for e in events]
        if not items:
            return []
        # Encoded before the transaction: the table lock is held for as short a time as can be.
        encoded = [(*encode_event_parts(i.event), json.dumps(i.metadata)) for i in items]
        with self.engine.begin() as conn:
            return self._append(conn, items, encoded, fence, owned)

    def _append(
        self,
        conn: Connection,
        items: list[NewEvent],
        encoded: list[tuple[str, str | None, str]],
        fence: tuple[str, int] | None,
        owned: bool,
    ) -> list[RecordedEvent]:
        # The lock, the fence, the events written with their positions and versions (computed
        # by the server, after the lock) and the lookup of what the reducer will read (after the
        # lock too: it sees every append before this one), in one round trip.
        raw = conn.connection.dbapi_connection
        assert isinstance(raw, psycopg.Connection)
        chunks = _insert_chunks(items, encoded)
        appended = [i.event for i in items]
        trust_new = sum(len(e.allocs) for e in appended if isinstance(e, PlanApplied)) >= TRUST_NEW_FROM
        state = SqlState(conn, owns_events=owned)
        state.take_metrics(appended)
        reads = reads_of(appended, trust_new=trust_new)
        query = prefetch_query(state, reads)
        stage = (
            len(items) <= EVENTS_PER_INSERT
            and sum(len(d) + len(m or "") for d, m, _ in encoded) >= STAGE_FROM
        )
        with raw.pipeline():
            if stage:
                nth, params = chunks[0]
                temps = [-(secrets.randbits(62) + 1) for _ in items]
                staged_params: list[Any] = []
                for k, temp in enumerate(temps):
                    staged_params += [temp, *params[5 * k : 5 * k + 5]]
                raw.execute(stage_events_sql(len(items)), staged_params)
            raw.execute(EVENTS_LOCK)
            fenced = raw.execute(FENCE, (fence[0],)) if fence is not None else None
            if stage:
                streams = [i.event.stream() for i in items]
                inserted = [raw.execute(*number_staged_sql(list(zip(temps, streams, nth, strict=True))))]
            else:
                inserted = [raw.execute(insert_events_sql(nth), params) for nth, params in chunks]
            if trust_new:
                # New placements are not looked up (a thousand-ID query under the lock); should
                # one exist after all, its insert fails and the projection is redone with lookups.
                raw.execute("SAVEPOINT trust_new")
            found = raw.execute(*query.statement) if query is not None else None
            epoch = fenced.fetchone() if fenced is not None else None
            rows = sorted(row for cur in inserted for row in cur.fetchall())
            prefetched = found.fetchall() if found is not None else []
        if fence is not None and (epoch is None or int(epoch[0]) != fence[1]):
            raise FencedError(f"lease {fence[0]!r} epoch {fence[1]} is not current")
        recorded = _recorded(items, rows)
        if query is not None:
            query.take(prefetched)
        state.assume_absent(reads.new)
        _project_and_commit(state, recorded, trust_new)
        if self.lock_held is not None:
            self.lock_held(time.time() - min(row[2] for row in rows))
        return recorded

    # --- leases ---
    def acquire_lease(self, name: str, holder: str) -> int:
        """Take over lease `name`: bump and return its epoch. Whoever held it is fenced from now
        on. Callers must hold the leadership lock (advisory lock) while they use the epoch."""
        with self.engine.begin() as conn:
            conn.exec_driver_sql(EVENTS_LOCK)
            row = conn.execute(
                text(
                    "INSERT INTO leases (name, epoch, holder) VALUES (:n, 1, :h) "
                    "ON CONFLICT (name) DO UPDATE SET epoch = leases.epoch + 1, holder = EXCLUDED.holder "
                    "RETURNING epoch"
                ),
                {"n": name, "h": holder},
            ).first()
            assert row is not None
            return int(row[0])

    # --- reading ---
    def log_id(self) -> str:
        with self.reader.connect() as conn:
            return str(conn.exec_driver_sql("SELECT log_id FROM log_meta").scalar_one())

    def stream_version(self, stream: str) -> int:
        """The version of `stream` (its last event's), 0 when it has none."""
        with self.reader.connect() as conn:
            v = conn.execute(
                text("SELECT coalesce(max(version), 0) FROM events WHERE stream = :s"), {"s": stream}
            ).scalar_one()
        return int(v)

    def last_position(self) -> int:
        with self.reader.connect() as conn:
            return int(conn.exec_driver_sql(LAST_POSITION).scalar_one())

    def read(
        self, after: int = 0, limit: int = 1000, *, replica: Callable[[str], Event] | None = None
    ) -> list[RecordedEvent]:
        """Events with position > `after`, in order, whole (their placement metrics put back).
        Gap-free: nothing can commit below the highest position already visible. `replica`: a
        replica's decoder instead, which keeps less (and the metrics are not read)."""
        metrics = "NULL" if replica is not None else "metrics"
        with self.reader.connect() as conn:
            rows = conn.execute(
                text(
                    f"SELECT position, stream, version, data::text, {metrics}, metadata, recorded_at "
                    "FROM events WHERE position > :a ORDER BY position LIMIT :l"
                ),
                {"a": after, "l": limit},
            ).all()
        return [
            RecordedEvent(
                int(r[0]),
                r[1],
                int(r[2]),
                replica(r[3]) if replica is not None else decode_event(r[3], metrics=r[4]),
                r[5],
                r[6],
            )
            for r in rows
        ]

    def read_raw(self, after: int = 0, limit: int = 1000) -> list[tuple[int, str, str, dict[str, Any]]]:
        """(position, type, JSON, metadata) after `after`, undecoded, without the placement
        metrics stored apart (the relay forwards them)."""
        with self.reader.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT position, type, data::text, metadata FROM events "
                    "WHERE position > :a ORDER BY position LIMIT :l"
                ),
                {"a": after, "l": limit},
            ).all()
        return [(int(r[0]), str(r[1]), str(r[2]), dict(r[3] or {})) for r in rows]

    def iter_all(self, batch: int = 2000) -> Iterator[RecordedEvent]:
        after = 0
        while True:
            chunk = self.read(after, batch)
            if not chunk:
                return
            yield from chunk
            after = chunk[-1].position

    def replay(self, until: int | None = None) -> InMemoryState:
        """The state the log describes, rebuilt in memory (replicas bootstrap like this when
        they have no snapshot)."""
        state = InMemoryState()
        for rec in self.iter_all():
            if until is not None and rec.position > until:
                break
            apply(state, rec.position, rec.event)
        return state

    def rebuild_projections(self, batch: int = 2000) -> int:
        """Throw the projections away and replay the whole log into them, in one transaction
        (readers keep seeing the old ones until it commits). Returns the last position."""
        with self.engine.begin() as conn:
            conn.exec_driver_sql("LOCK TABLE events IN SHARE MODE")
            conn.exec_driver_sql("TRUNCATE " + ", ".join(PROJECTION_TABLES))
            last = 0
            while True:
                rows = conn.execute(
                    text(
                        "SELECT position, data::text, metrics FROM events WHERE position > :a "
                        "ORDER BY position LIMIT :l"
                    ),
                    {"a": last, "l": batch},
                ).all()
                if not rows:
                    break
                events = [(int(r[0]), decode_event(r[1], metrics=r[2])) for r in rows]
                _project(SqlState(conn), events)
                last = events[-1][0]
            return last

    def projection_dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every projection row, ordered: what `rebuild` must reproduce exactly."""
        out: dict[str, list[tuple[Any, ...]]] = {}
        with self.engine.connect() as conn:
            for table in PROJECTION_TABLES:
                rows = conn.exec_driver_sql(f"SELECT * FROM {table} ORDER BY 1, 2").all()
                out[table] = [tuple(r) for r in rows]
        return out
