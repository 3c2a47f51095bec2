"""Garbage-collection benchmark: collecting 100,000 terminal allocs, 10,000 evals and 1,000 jobs.

On a fresh embedded PostgreSQL (durable, as the services run it) the log is given --jobs
finished batch jobs, each with --evals-per-job complete evals and --allocs-per-eval complete
allocs, all older than every threshold, on --nodes nodes. Then a force-gc core eval is run as
the collector runs it (drover.gc.collector: its replica loaded from the projections as a
service's is, its passes decided by drover.control.leader.gc, appended in chunks of --chunk objects,
its replica fed what it appended) until it is complete. Reported: the whole collection's time,
the appends it made, and per append the time the events lock was held
(`EventStore.lock_held`) and the whole append, the largest of each against the 50 ms target;
and that the projections hold nothing of it afterwards. `--chunks 250,500,1000,2000` runs the
collection once per chunk size, each on a log of its own.

    python -m bench.gc --out bench/out/gc.json
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.report import percentile, write
from bench.scheduler import run_case
from drover.gc.collector import Collector
from drover.model import Allocation, Evaluation, Job, Node, Resources, Task, TaskGroup
from drover.model.durations import HOUR
from drover.model.evaluation import core_eval
from drover.model.events import EvalsUpserted, Event, JobRegistered, NewEvent, NodeRegistered, PlanApplied
from drover.model.reducer import apply
from drover.runtime.embedded import EmbeddedPostgres
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, RecordedEvent, migrate
from drover.runtime.store.queries import load_snapshot

TARGET_MS = 50
JOBS_PER_APPEND = 10
# The log to collect, by default: 1,000 jobs x 10 evals x 10 allocs, on 500 down nodes
# (bench/pipeline.py --garbage seeds the same).
JOBS, EVALS_PER_JOB, ALLOCS_PER_EVAL, NODES = 1000, 10, 10, 500
# How old it all is: beyond every threshold (the longest, batch evals' and nodes', is 24 h).
AGE = 48 * HOUR


def _job(i: int, old: int) -> Job:
    group = TaskGroup(
        name="g", tasks=[Task(name="t", driver="mock", resources=Resources(cpu=10, memory_mb=10))]
    )
    return Job(id=f"batch-{i:04d}", type="batch", task_groups=[group], submit_time=old)


def _events(i: int, args: argparse.Namespace, old: int) -> list[Event]:
    """A finished batch job: registered, its evals complete, its allocs complete."""
    job = _job(i, old)
    evals = [
        Evaluation(id=f"e-{i:04d}-{k:02d}", job_id=job.id, type="batch", status="complete", modify_time=old)
        for k in range(args.evals_per_job)
    ]
    allocs = [
        Allocation(
            id=f"a-{i:04d}-{k:02d}-{n:03d}",
            name=f"{job.id}.g[{n}]",
            job_id=job.id,
            eval_id=evaluation.id,
            task_group="g",
            node_id=f"n{(i + n) % args.nodes:04d}",
            client_status="complete",
            resources=Resources(cpu=10, memory_mb=10),
        )
        for k, evaluation in enumerate(evals)
        for n in range(args.allocs_per_eval)
    ]
    plan = PlanApplied(eval_id=evals[0].id, job_id=job.id, allocs=allocs, at=old)
    return [JobRegistered(job=job), EvalsUpserted(evals=evals), plan]


def fill(store: EventStore, args: argparse.Namespace, old: int) -> float:
    """The log to collect (`args`: jobs, evals_per_job, allocs_per_eval, nodes), written
    `JOBS_PER_APPEND` jobs an append; returns the seconds it took."""
    t0 = time.perf_counter()
    store.append([NodeRegistered(node=Node(id=f"n{i:04d}", status="down")) for i in range(args.nodes)])
    for start in range(0, args.jobs, JOBS_PER_APPEND):
        batch = range(start, min(start + JOBS_PER_APPEND, args.jobs))
        store.append([e for i in batch for e in _events(i, args, old)])
    return time.perf_counter() - t0


class Replica:
    """The collector's replica, fed what it appends (the service's is fed by the relay)."""

    def __init__(self, store: EventStore, settings: Settings) -> None:
        self.store = store
        self.state = load_snapshot(store)
        self.held: list[float] = []
        self.append_ms: list[float] = []
        store.lock_held = self.held.append
        self.collector = Collector(self.state, settings, self.append, self.caught_up)

    async def append(self, items: list[NewEvent]) -> list[RecordedEvent] | None:
        t0 = time.perf_counter()
        recorded = await asyncio.to_thread(self.store.append, items)
        self.append_ms.append((time.perf_counter() - t0) * 1e3)
        for r in recorded:
            apply(self.state, r.position, r.event)
            self.collector.on_event(r.position, r.event, {})
        return recorded

    async def caught_up(self, position: int) -> bool:
        return self.state.index >= position


def _count(store: EventStore, table: str) -> int:
    with store.reader.connect() as conn:
        return int(conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar_one())


def run(url: str, args: argparse.Namespace, chunk: int) -> dict[str, Any]:
    """Fill the log at `url`, then collect it all with one force-gc core eval."""
    migrate(url)
    store = EventStore(url)
    try:
        now = time.time_ns()
        fill_s = fill(store, args, now - AGE)
        before = {t: _count(store, t) for t in ("jobs", "evals", "allocs", "nodes")}
        t0 = time.perf_counter()
        replica = Replica(store, Settings(gc_chunk=chunk))
        load_s = time.perf_counter() - t0
        (rec,) = store.append([EvalsUpserted(evals=[core_eval("force-gc", time.time_ns())])])
        apply(replica.state, rec.position, rec.event)
        replica.collector.on_event(rec.position, rec.event, {})
        replica.held.clear()  # the collection's appends alone
        t0 = time.perf_counter()
        ok = asyncio.run(replica.collector.step())
        total_s = time.perf_counter() - t0
        after = {t: _count(store, t) for t in ("jobs", "evals", "allocs", "nodes")}
        held = [h * 1e3 for h in replica.held]
        return {
            "chunk": chunk,
            "complete": ok and after == {"jobs": 0, "evals": 1, "allocs": 0, "nodes": 0},
            "before": before,
            "after": after,
            "fill_s": round(fill_s, 1),
            "replica_load_s": round(load_s, 2),
            "total_s": round(total_s, 2),
            "appends": len(held),
            "lock_held_ms": {
                "p50": round(statistics.median(held), 1),
                "p99": round(percentile(held, 0.99), 1),
                "max": round(max(held), 1),
            },
            "append_ms": {
                "p50": round(statistics.median(replica.append_ms), 1),
                "max": round(max(replica.append_ms), 1),
            },
        }
    finally:
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/gc.json")
    ap.add_argument("--jobs", type=int, default=JOBS)
    ap.add_argument("--evals-per-job", type=int, default=EVALS_PER_JOB)
    ap.add_argument("--allocs-per-eval", type=int, default=ALLOCS_PER_EVAL)
    ap.add_argument("--nodes", type=int, default=NODES)
    ap.add_argument("--chunk", type=int, default=Settings().gc_chunk, help="objects per collecting append")
    ap.add_argument("--chunks", help="several chunk sizes, comma-separated: a run of each")
    args = ap.parse_args()
    chunks = [int(c) for c in args.chunks.split(",")] if args.chunks else [args.chunk]
    runs = []
    for chunk in chunks:
        with tempfile.TemporaryDirectory(prefix="drover-gc-") as tmp:
            pg = EmbeddedPostgres(Path(tmp) / "pg")
            try:
                runs.append(run(pg.start(), args, chunk))
            finally:
                pg.kill()
    main_run = next(r for r in runs if r["chunk"] == args.chunk) if args.chunk in chunks else runs[0]
    result: dict[str, Any] = {
        "benchmark": "gc",
        "jobs": args.jobs,
        "evals": args.jobs * args.evals_per_job,
        "allocs": args.jobs * args.evals_per_job * args.allocs_per_eval,
        "nodes": args.nodes,
        "host_reference_eval_ms": run_case(5000, 50, 1000, [], repeats=5)["ms_per_eval"],
        "target": f"lock_held_ms max < {TARGET_MS}",
        **{k: v for k, v in main_run.items() if k not in ("before", "after")},
        "runs": runs,
    }
    write(result, args.out)


if __name__ == "__main__":
    main()
