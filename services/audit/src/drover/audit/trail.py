"""The audit trail: one row per event of the log, in a PostgreSQL table the subscriber owns.

The row's key is the log's id and the event's position, and a row is inserted only if that key
is new, in the same statement: a redelivery (after a restart of the subscriber, of NATS, or an
ack lost on the way) finds its row already there and writes nothing. The key, not a highest
position seen, is what deduplicates: JetStream may redeliver an older message after a newer one
was recorded, and a "skip at or below the last position" rule would drop it.

The table lives wherever `DROVER_AUDIT_DATABASE_URL` points (Drover's own database when unset),
so it is created here rather than by Drover's migrations: the trail belongs to the subscriber,
not to the log's schema.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import psycopg

TABLE = "audit_trail"

CREATE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    log_id      text        NOT NULL,
    position    bigint      NOT NULL,
    type        text        NOT NULL,
    event       jsonb       NOT NULL,
    traceparent text,
    audited_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (log_id, position)
)
"""

INSERT = f"""
INSERT INTO {TABLE} (log_id, position, type, event, traceparent)
VALUES (%s, %s, %s, %s::jsonb, %s)
ON CONFLICT (log_id, position) DO NOTHING
"""


@dataclass(frozen=True)
class Entry:
    """An event as the subscriber received it: where it sits in which log, and its JSON."""

    log_id: str
    position: int
    type: str
    event: str
    traceparent: str | None = None


class LogMismatch(Exception):
    """A message names a log other than the database's: its body cannot be read from there."""


class Connection:
    """One autocommit connection, opened again after it breaks; statements take turns on it."""

    def __init__(self, conninfo: str) -> None:
        self.conninfo = conninfo
        self._conn: psycopg.AsyncConnection | None = None
        self._lock = asyncio.Lock()

    async def execute(self, sql: str, params: tuple[object, ...] = ()) -> psycopg.AsyncCursor:
        async with self._lock:
            if self._conn is None or self._conn.closed or self._conn.broken:
                self._conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
            return await self._conn.execute(sql, params)

    async def executemany(self, sql: str, rows: list[tuple[object, ...]]) -> None:
        async with self._lock:
            if self._conn is None or self._conn.closed or self._conn.broken:
                self._conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
            async with self._conn.cursor() as cur:
                await cur.executemany(sql, rows)

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()


class Trail:
    """The audit table (`audit`), and the log that bodies sent without the message are read
    from (`log`): the same connection when both are in one database."""

    def __init__(self, audit_conninfo: str, log_conninfo: str) -> None:
        self.audit = Connection(audit_conninfo)
        self.log = self.audit if log_conninfo == audit_conninfo else Connection(log_conninfo)

    async def ensure(self) -> None:
        await self.audit.execute(CREATE)

    async def record(self, entry: Entry) -> bool:
        """Write `entry` unless its position of its log is already in the trail; True if
        written."""
        cur = await self.audit.execute(
            INSERT, (entry.log_id, entry.position, entry.type, entry.event, entry.traceparent)
        )
        return cur.rowcount == 1

    async def read_from_log(self, log_id: str, position: int) -> tuple[str, str]:
        """(type, JSON) of the event at `position`, for a message sent without its body."""
        cur = await self.log.execute(
            "SELECT m.log_id, e.type, e.data::text FROM events e, log_meta m WHERE e.position = %s",
            (position,),
        )
        row = await cur.fetchone()
        if row is None:
            raise LookupError(f"no event at position {position} in the log")
        if row[0] != log_id:
            raise LogMismatch(f"the message is from log {log_id}, the database holds log {row[0]}")
        return str(row[1]), str(row[2])

    async def backfill(self, batch: int = 1000) -> int:
        """Copy from the log the events past the trail's last position of it, up to the log's
        last now: those the stream no longer holds (kept 24 hours), or never held for this
        subscriber. What the stream delivers again afterwards is dropped as a repeat. The
        number of events read."""
        cur = await self.log.execute("SELECT log_id FROM log_meta")
        row = await cur.fetchone()
        if row is None:
            return 0
        log_id = str(row[0])
        cur = await self.audit.execute(
            f"SELECT coalesce(max(position), 0) FROM {TABLE} WHERE log_id = %s", (log_id,)
        )
        got = await cur.fetchone()
        after, copied = int(got[0]) if got else 0, 0
        while True:
            cur = await self.log.execute(
                "SELECT position, type, data::text, metadata->>'traceparent' FROM events "
                "WHERE position > %s ORDER BY position LIMIT %s",
                (after, batch),
            )
            rows = await cur.fetchall()
            if not rows:
                return copied
            await self.audit.executemany(INSERT, [(log_id, *r) for r in rows])
            after, copied = int(rows[-1][0]), copied + len(rows)

    async def close(self) -> None:
        await self.audit.close()
        if self.log is not self.audit:
            await self.log.close()
