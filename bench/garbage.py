"""The pipeline bench's garbage (bench/pipeline.py --garbage, --force-gc): bench/gc.py's log to
collect - 1,000 finished batch jobs, 10,000 complete evals, 100,000 complete allocs on 500
down nodes, all older than every threshold - written before the services start, and a forced
collection (PUT /v1/system/gc) timed from the log: its core eval complete, and what is left.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from sqlalchemy import Connection, text

from bench import gc
from drover.model.evaluation import CORE_JOB_FORCE_GC
from drover.runtime.store import EventStore

GARBAGE = argparse.Namespace(
    jobs=gc.JOBS, evals_per_job=gc.EVALS_PER_JOB, allocs_per_eval=gc.ALLOCS_PER_EVAL, nodes=gc.NODES
)
# The garbage's IDs, as bench/gc.py names them (the pipeline's own are big-*, probe-*, node-*).
JOBS_LIKE = "batch-%"
NODE_IDS = [f"n{i:04d}" for i in range(GARBAGE.nodes)]


def seed(store: EventStore) -> dict[str, Any]:
    """Write the garbage to the log, `gc.JOBS_PER_APPEND` jobs an append."""
    seconds = gc.fill(store, GARBAGE, time.time_ns() - gc.AGE)
    return {
        "jobs": GARBAGE.jobs,
        "evals": GARBAGE.jobs * GARBAGE.evals_per_job,
        "allocs": GARBAGE.jobs * GARBAGE.evals_per_job * GARBAGE.allocs_per_eval,
        "nodes": GARBAGE.nodes,
        "seed_s": round(seconds, 1),
    }


def left(conn: Connection) -> dict[str, int]:
    """How much of the garbage the projections still hold."""
    jobs = {"jobs": JOBS_LIKE}
    counts: dict[str, tuple[str, dict[str, Any]]] = {
        "jobs": ("SELECT count(*) FROM jobs WHERE id LIKE :jobs", jobs),
        "evals": ("SELECT count(*) FROM evals WHERE job_id LIKE :jobs", jobs),
        "allocs": ("SELECT count(*) FROM allocs WHERE job_id LIKE :jobs", jobs),
        "nodes": ("SELECT count(*) FROM nodes WHERE id = ANY(:ids)", {"ids": NODE_IDS}),
    }
    return {kind: int(conn.execute(text(sql), params).scalar_one()) for kind, (sql, params) in counts.items()}


def forced_done(conn: Connection) -> float | None:
    """When the force-gc core eval was completed (or failed): its last change's commit, as a
    unix time; None while it is pending or before there is one."""
    recorded = conn.execute(
        text(
            "SELECT max(e.recorded_at) FROM evals v JOIN events e ON e.position = v.modify_index "
            "WHERE v.job_id = :core AND v.status IN ('complete', 'failed')"
        ),
        {"core": CORE_JOB_FORCE_GC},
    ).scalar_one()
    return recorded.timestamp() if recorded is not None else None


def collection(conn: Connection, after: int, forced: float, load_end: float) -> dict[str, Any]:
    """The forced collection, from the log after position `after`: its core eval done, timed
    from `forced` (when the PUT was sent) and against `load_end` (the load's last commit), and
    the collecting events' first and last commits."""
    done = forced_done(conn)
    first, last, events = conn.execute(
        text(
            "SELECT min(recorded_at), max(recorded_at), count(*) FROM events WHERE position > :p "
            "AND type IN ('EvalsCollected', 'JobCollected', 'NodesCollected')"
        ),
        {"p": after},
    ).one()
    return {
        "complete_s": round(done - forced, 2) if done is not None else None,
        "complete_after_load_s": round(done - load_end, 2) if done is not None else None,
        "first_collected_s": round(first.timestamp() - forced, 2) if first is not None else None,
        "last_collected_s": round(last.timestamp() - forced, 2) if last is not None else None,
        "collecting_events": int(events),
    }
