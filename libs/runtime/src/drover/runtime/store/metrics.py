"""The cluster's metrics, counted from the projections when `GET /v1/metrics` is scraped: evals
by status and trigger, nodes by status, allocs by client status, and the log's position. Each
is a count over a table's own columns (or a document field for evals' trigger and nodes'
status), read in one snapshot so the metrics agree with each other."""

from __future__ import annotations

from typing import Any

from drover.runtime.store.eventstore import EventStore

_EVALS = "SELECT status, coalesce(doc->>'TriggeredBy', ''), count(*) FROM evals GROUP BY 1, 2"
_NODES = "SELECT coalesce(doc->>'Status', ''), count(*) FROM nodes GROUP BY 1"
_ALLOCS = "SELECT client_status, count(*) FROM allocs GROUP BY 1"
_POSITION = "SELECT coalesce(max(position), 0) FROM events"


def cluster_gauges(store: EventStore) -> list[dict[str, Any]]:
    """The metrics as gauges in the form `drover.runtime.metrics` snapshots take."""
    out: list[dict[str, Any]] = []
    with store.engine.connect() as conn:
        conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        for status, trigger, n in conn.exec_driver_sql(_EVALS):
            out.append({"Name": "evals", "Labels": {"status": status, "triggered_by": trigger}, "Value": n})
        for status, n in conn.exec_driver_sql(_NODES):
            out.append({"Name": "nodes", "Labels": {"status": status}, "Value": n})
        for status, n in conn.exec_driver_sql(_ALLOCS):
            out.append({"Name": "allocs", "Labels": {"client_status": status}, "Value": n})
        position = conn.exec_driver_sql(_POSITION).scalar_one()
        out.append({"Name": "log.position", "Labels": {}, "Value": int(position)})
    return out
