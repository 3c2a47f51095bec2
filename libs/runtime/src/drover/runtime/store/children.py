"""Reads about jobs and their children (dispatched or periodic launches, found by ParentID):
the children of some jobs, the allocs a summary counts, and the child a dispatch's idempotency
token names."""

from __future__ import annotations

from sqlalchemy import Connection, text

from drover.model import Job
from drover.model.events import dispatch_stream


def children_of(conn: Connection, namespace: str, parent_ids: list[str]) -> list[Job]:
    """The jobs whose ParentID is one of `parent_ids`, without their payload and groups (what
    a count of their statuses needs: a dispatched child carries up to 16 KiB of payload)."""
    rows = conn.execute(
        text(
            "SELECT (doc - 'Payload' - 'TaskGroups')::text FROM jobs "
            "WHERE namespace = :ns AND doc->>'ParentID' = ANY(:ids)"
        ),
        {"ns": namespace, "ids": parent_ids},
    )
    return [Job.model_validate_json(r[0]) for r in rows]


def alloc_counts(conn: Connection, namespace: str, job_ids: list[str]) -> list[tuple[str, str, str, int]]:
    """(job, task group, client status, count) of the allocs of `job_ids`."""
    rows = conn.execute(
        text(
            "SELECT job_id, task_group, client_status, count(*) FROM allocs "
            "WHERE namespace = :ns AND job_id = ANY(:ids) GROUP BY 1, 2, 3"
        ),
        {"ns": namespace, "ids": job_ids},
    )
    return [(r[0], r[1], r[2], int(r[3])) for r in rows]


def dispatched_with_token(
    conn: Connection, namespace: str, job_id: str, token: str
) -> tuple[Job | None, int]:
    """The child of the job dispatched with idempotency `token` (None if there is none), and
    the version of the token's stream, from one snapshot: what a dispatch appends after."""
    doc, version = conn.execute(
        text(
            "SELECT (SELECT doc::text FROM jobs WHERE namespace = :ns AND doc->>'ParentID' = :id "
            "AND doc->>'DispatchIdempotencyToken' = :token LIMIT 1), "
            "(SELECT coalesce(max(version), 0) FROM events WHERE stream = :s)"
        ),
        {"ns": namespace, "id": job_id, "token": token, "s": dispatch_stream(namespace, job_id, token)},
    ).one()
    return (Job.model_validate_json(doc) if doc is not None else None), int(version)
