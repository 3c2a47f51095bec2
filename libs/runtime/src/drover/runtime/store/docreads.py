"""The connection a read holds, and single-object reads as the API answers them: the log's index and the object's document (as
stored, in Nomad's form) in one statement - one round trip and one statement's client cost
instead of one per value (docs/experiments/2026-11-29-request-floor.md). The document comes
back as text, for the API to decode and encode once per change (drover.api.encoded)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import Connection, text

from drover.runtime.store.eventstore import LAST_POSITION, EventStore
from drover.runtime.store.sqlparts import like_prefix, page_on_id

_NODE = text(f"SELECT ({LAST_POSITION}), (SELECT doc::text FROM nodes WHERE id = :id)")
# The job's document and what its Status is derived from (children.with_status's grouped
# queries, for one job): bool_or over no rows is NULL.
_JOB = text(
    f"SELECT ({LAST_POSITION}), "
    "(SELECT doc::text FROM jobs WHERE namespace = :ns AND id = :id), "
    "(SELECT bool_or(NOT (desired_status IN ('stop', 'evict') "
    "OR client_status IN ('complete', 'failed', 'lost'))) "
    "FROM allocs WHERE namespace = :ns AND job_id = :id), "
    "(SELECT bool_or(status NOT IN ('complete', 'failed', 'canceled')) "
    "FROM evals WHERE namespace = :ns AND job_id = :id)"
)


@dataclass(frozen=True)
class JobDoc:
    """A job's document and its allocs' and evals' liveness (None: it has none)."""

    doc: str
    live_allocs: bool | None
    live_evals: bool | None


class DocReads:
    """The base of the API's reads (drover.runtime.store.queries.Reads)."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._held = threading.local()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """This thread's reads in the block on one pooled connection: a read of the index and a
        document (and a command's reads) check out one, not one each - a checkout and its return
        cost the client more CPU than a short statement. Each statement still sees the log as
        it is when it runs (autocommit)."""
        with self.store.reader.connect() as conn:
            self._held.conn = conn
            try:
                yield
            finally:
                self._held.conn = None

    def _connect(self) -> contextlib.AbstractContextManager[Connection]:
        conn: Connection | None = getattr(self._held, "conn", None)
        return contextlib.nullcontext(conn) if conn is not None else self.store.reader.connect()

    def index(self) -> int:
        """The log's last position: the cluster's index."""
        with self._connect() as conn:
            return int(conn.exec_driver_sql(LAST_POSITION).scalar_one())

    def node_doc_at(self, node_id: str) -> tuple[int, str | None]:
        """The log's index and the node's document as stored (None: no such node)."""
        with self._connect() as conn:
            index, doc = conn.execute(_NODE, {"id": node_id}).one()
        return int(index), doc

    def job_doc_at(self, namespace: str, job_id: str) -> tuple[int, JobDoc | None]:
        """The log's index, the job's document as stored and what its Status is derived from."""
        with self._connect() as conn:
            index, doc, allocs, evals = conn.execute(_JOB, {"ns": namespace, "id": job_id}).one()
        return int(index), None if doc is None else JobDoc(doc, allocs, evals)

    def alloc_docs(self, namespace: str | None, prefix: str, start: str, limit: int) -> list[tuple[str, str]]:
        """The allocs (of `namespace`; None: every one's) by ID prefix, from ID `start` on, at
        most `limit` (0: all), as (ID, document as stored)."""
        where, params = ["id LIKE :p"], {"p": like_prefix(prefix)}
        if namespace is not None:
            where.append("namespace = :ns")
            params["ns"] = namespace
        tail = page_on_id(where, params, start, limit)
        sql = f"SELECT id, doc::text FROM allocs WHERE {' AND '.join(where)} ORDER BY id{tail}"
        with self._connect() as conn:
            return [(r[0], r[1]) for r in conn.execute(text(sql), params)]
