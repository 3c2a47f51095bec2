"""The statements of an append that write the log itself: the lock, the fence check, and the
event rows with the positions and stream versions the server computes under the lock, inserted
under it or staged before it and numbered under it (drover.runtime.store.eventstore)."""

from __future__ import annotations

from typing import Any

from drover.runtime.locks import EVENTS_LOCK_KEY

# Every append holds this transaction-level advisory lock while it assigns positions and until
# it commits (drover.runtime.store.eventstore).
EVENTS_LOCK = f"SELECT pg_advisory_xact_lock({EVENTS_LOCK_KEY})"
# Every event records the append protocol it was written under (migration 0005): 1, the table
# lock; 2, this advisory lock and staged inserts. Writers of protocol 1 name no protocol, and
# the column has no default: their inserts are refused rather than left to append beside ones
# that do not exclude them (a service left running the code before 0005).
APPEND_PROTOCOL = 2


def insert_events_sql(nth: list[int]) -> str:
    """The head of an append, run after the lock is granted (a statement of its own, so its
    snapshot is taken after the lock): event i gets the next position after the log's last,
    plus i, and its stream's version plus `nth[i]` (which of this append's events of that
    stream it is). Rows as VALUES: Postgres parses a text array of large documents slowly."""
    rows = ",".join(f"(%s, %s, %s, %s, %s, {i}, {k})" for i, k in enumerate(nth, 1))
    return (
        f"WITH new (stream, type, data, metrics, metadata, ord, nth) AS (VALUES {rows}), "
        "head AS (SELECT coalesce(max(position), 0) AS position FROM events), "
        "versions AS (SELECT stream, max(version) AS version FROM events "
        "WHERE stream IN (SELECT stream FROM new) GROUP BY stream) "
        f"INSERT INTO events (position, stream, version, type, data, metrics, metadata, protocol) "
        "SELECT head.position + new.ord, new.stream, coalesce(versions.version, 0) + new.nth, "
        "new.type, CAST(new.data AS json), CAST(new.metrics AS text), CAST(new.metadata AS jsonb), "
        f"{APPEND_PROTOCOL} "
        "FROM new CROSS JOIN head LEFT JOIN versions ON versions.stream = new.stream "
        "RETURNING position, version, extract(epoch FROM clock_timestamp())::float8"
    )


def stage_events_sql(count: int) -> str:
    """Events inserted before the lock, each at a staging position (negative, random) and
    without a version: Postgres validates and compresses their documents - for a large plan,
    most of writing the event rows - while other appends hold the lock. No committed row has
    a staging position: `number_staged_sql` numbers every one under the lock."""
    rows = ",".join("(%s, %s, %s, %s, %s, %s)" for _ in range(count))
    return (
        f"INSERT INTO events (position, stream, type, data, metrics, metadata, protocol) "
        f"SELECT p, s, t, CAST(d AS json), CAST(m AS text), CAST(md AS jsonb), {APPEND_PROTOCOL} "
        f"FROM (VALUES {rows}) AS new (p, s, t, d, m, md)"
    )


def number_staged_sql(staged: list[tuple[int, str, int]]) -> tuple[str, list[Any]]:
    """Under the lock: give the staged events (staging position, stream, nth of its stream in
    this append) their positions and versions, as `insert_events_sql` would have."""
    rows = ",".join(f"({temp}::bigint, %s, {i}, {nth})" for i, (temp, _, nth) in enumerate(staged, 1))
    return (
        f"WITH staged (temp, stream, ord, nth) AS (VALUES {rows}), "
        "head AS (SELECT coalesce(max(position), 0) AS position FROM events WHERE position > 0), "
        "versions AS (SELECT stream, max(version) AS version FROM events "
        "WHERE stream IN (SELECT stream FROM staged) GROUP BY stream) "
        "UPDATE events SET position = head.position + staged.ord, "
        "version = coalesce(versions.version, 0) + staged.nth "
        "FROM staged CROSS JOIN head LEFT JOIN versions ON versions.stream = staged.stream "
        "WHERE events.position = staged.temp "
        "RETURNING events.position, events.version, extract(epoch FROM clock_timestamp())::float8"
    ), [stream for _, stream, _ in staged]


# The lease's current epoch, read under the lock: an append carrying an older one is refused.
FENCE = "SELECT epoch FROM leases WHERE name = %s"
