"""What the console's "what happened and why" reads (`Reads`' part): a page of one job's events
from the log, the newest first, and the resources the live allocs use on each client.

A job's events are on several streams of the log: the job's own (registers, stops, scaling,
stability), its restarts', each of its evals' plan (`plan:<eval>`: placements, stops,
deployments started) and each of its deployments'. The streams are named from the projections
(the job's evals and deployments) and read through the log's `(stream, version)` index, so a
page costs a few index probes per stream and never a scan of the log. Evals themselves are
written to one shared stream (`evals`), and clients report allocs on their node's stream: the
console reads those from the projections (their trigger, outcome and placement failures; the
allocs that failed), which the timeline merges in by log position."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from drover.model import Allocation, Evaluation
from drover.model.events import Event, decode_event, job_stream, restart_stream

if TYPE_CHECKING:
    from drover.runtime.store.eventstore import EventStore

# The job's newest evals and deployments whose streams a page reads (older ones are collected
# by then in any cluster that runs its garbage collector).
STREAMS_OF = 500


@dataclass
class LoggedEvent:
    position: int
    recorded_at: datetime
    event: Event


def _decodable(data: str) -> Event | None:
    try:
        return decode_event(data)
    except ValueError:
        return None  # a type this code does not know (a newer writer's): left out, not a 500


class TimelineReads:
    """Held by `Reads`, which provides the store."""

    store: EventStore

    def job_streams(self, namespace: str, job_id: str) -> list[str]:
        """The log streams a job's events are appended to (see the module's docstring)."""
        with self.store.reader.connect() as conn:
            rows = conn.execute(
                text(
                    "(SELECT 'plan:' || id FROM evals WHERE namespace = :ns AND job_id = :job "
                    " ORDER BY modify_index DESC LIMIT :n) UNION ALL "
                    "(SELECT 'deployment:' || id FROM deployments WHERE namespace = :ns AND job_id = :job "
                    " ORDER BY create_index DESC LIMIT :n)"
                ),
                {"ns": namespace, "job": job_id, "n": STREAMS_OF},
            ).all()
        return [job_stream(namespace, job_id), restart_stream(namespace, job_id), *(r[0] for r in rows)]

    def job_log(self, namespace: str, job_id: str, *, before: int = 0, limit: int = 25) -> list[LoggedEvent]:
        """The job's logged events before position `before` (0: the newest), newest first,
        `limit` at most; without the placement metrics the log keeps apart."""
        streams = self.job_streams(namespace, job_id)
        with self.store.reader.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT position, recorded_at, data::text FROM events "
                    "WHERE stream = ANY(:streams) AND (:before = 0 OR position < :before) "
                    "ORDER BY position DESC LIMIT :limit"
                ),
                {"streams": streams, "before": before, "limit": limit},
            ).all()
        out = []
        for position, recorded_at, data in rows:
            event = _decodable(data)
            if event is not None:
                out.append(LoggedEvent(int(position), recorded_at, event))
        return out

    def _deep(self, table: str, key: str, where: str, params: dict[str, Any]) -> list[str]:
        """Documents of `table` where `where`, by `key` the newest first: `limit` deep, and the
        rest of the rows at the last key read (a page never ends inside a key's rows)."""
        cond = f"namespace = :ns AND job_id = :job AND {where} AND (:before = 0 OR {key} < :before)"
        with self.store.reader.connect() as conn:
            rows = conn.execute(
                text(
                    f"SELECT doc::text FROM {table} WHERE {cond} AND {key} >= coalesce(("
                    f"SELECT {key} FROM {table} WHERE {cond} ORDER BY {key} DESC OFFSET :limit - 1 LIMIT 1), 0) "
                    f"ORDER BY {key} DESC"
                ),
                params,
            ).all()
        return [r[0] for r in rows]

    def job_evals_created(
        self, namespace: str, job_id: str, *, before: int = 0, limit: int = 25
    ) -> list[Evaluation]:
        """The job's evals created before position `before` (0: any), the newest first: `limit`
        deep and those created with the last."""
        params = {"ns": namespace, "job": job_id, "before": before, "limit": limit}
        docs = self._deep("evals", "(doc->>'CreateIndex')::bigint", "true", params)
        return [Evaluation.model_validate_json(d) for d in docs]

    def job_allocs_troubled(
        self, namespace: str, job_id: str, *, before: int = 0, limit: int = 25
    ) -> list[Allocation]:
        """The job's allocs that failed, were lost or restarted a task, last changed before
        position `before` (0: any), the latest first: `limit` deep and those changed with the
        last. (A restart count is matched in the document's text, which is never parsed here.)"""
        params = {"ns": namespace, "job": job_id, "before": before, "limit": limit}
        where = "(client_status IN ('failed', 'lost') OR doc ~ '\"Restarts\":[1-9]')"
        docs = self._deep("allocs", "modify_index", where, params)
        return [Allocation.model_validate_json(d) for d in docs]

    def live_usage_by_node(self, node_ids: list[str]) -> dict[str, tuple[int, int, int]]:
        """(cpu MHz, memory MB, disk MB) the live allocs use on each of `node_ids` (what the
        scheduler counts against a client's capacity)."""
        with self.store.reader.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT doc::text FROM allocs WHERE node_id = ANY(:ids) AND desired_status = 'run' "
                    "AND client_status NOT IN ('complete', 'failed', 'lost')"
                ),
                {"ids": node_ids},
            ).all()
        used: dict[str, tuple[int, int, int]] = {}
        for (doc,) in rows:
            a = Allocation.model_validate_json(doc)
            cpu, mem, disk = used.get(a.node_id, (0, 0, 0))
            r = a.resources
            used[a.node_id] = (cpu + r.cpu, mem + r.memory_mb, disk + r.disk_mb)
        return used
