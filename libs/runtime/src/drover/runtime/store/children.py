"""Reads about jobs and their children (dispatched or periodic launches, found by ParentID):
the jobs' Status derived from their allocs and evals, the children of some jobs, the allocs a
summary counts, and the child a dispatch's idempotency token names."""

from __future__ import annotations

from sqlalchemy import Connection, text

from drover.model import Job
from drover.model.events import dispatch_stream
from drover.model.job import derive_job_status


def with_status(conn: Connection, jobs: list[Job]) -> list[Job]:
    """The jobs (of any namespaces) with Status derived from their allocs and evals now (two
    grouped queries per namespace)."""
    by_namespace: dict[str, list[str]] = {}
    for j in jobs:
        by_namespace.setdefault(j.namespace, []).append(j.id)
    allocs: dict[tuple[str, str], bool] = {}
    evals: dict[tuple[str, str], bool] = {}
    for ns, ids in by_namespace.items():
        params = {"ns": ns, "ids": ids}
        for found, sql in (
            (allocs, "SELECT job_id, bool_or(NOT (desired_status IN ('stop', 'evict') "
                     "OR client_status IN ('complete', 'failed', 'lost'))) "
                     "FROM allocs WHERE namespace = :ns AND job_id = ANY(:ids) GROUP BY job_id"),
            (evals, "SELECT job_id, bool_or(status NOT IN ('complete', 'failed', 'canceled')) "
                    "FROM evals WHERE namespace = :ns AND job_id = ANY(:ids) GROUP BY job_id"),
        ):  # fmt: skip
            found.update(((ns, r[0]), bool(r[1])) for r in conn.execute(text(sql), params))
    out = []
    for j in jobs:
        key = (j.namespace, j.id)
        status = derive_job_status(
            j,
            has_allocs=key in allocs,
            live_allocs=allocs.get(key, False),
            has_evals=key in evals,
            live_evals=evals.get(key, False),
        )
        out.append(j.model_copy(update={"status": status}))
    return out


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


def newest_children(conn: Connection, namespace: str, parent_id: str, limit: int) -> list[Job]:
    """The job's `limit` newest children (by SubmitTime), without their payload and groups."""
    rows = conn.execute(
        text(
            "SELECT (doc - 'Payload' - 'TaskGroups')::text FROM jobs WHERE namespace = :ns "
            "AND doc->>'ParentID' = :id ORDER BY (doc->>'SubmitTime')::bigint DESC NULLS LAST, id DESC LIMIT :n"
        ),
        {"ns": namespace, "id": parent_id, "n": limit},
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
