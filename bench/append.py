"""Append benchmark: how long a plan's commit holds the event log's lock.

Every append holds the events lock from numbering its events until it commits (positions
gap-free in commit order), so what a large plan's commit holds it for is what every register
and every small plan behind it waits. On a fresh embedded PostgreSQL (durable, as the services
run it) with 5,000 registered nodes, this appends, as the plan applier does, real plans from
the scheduling core, sent through the wire as a worker sends them: 1,000 placements in events
of ALLOCS_PER_EVENT, and 10 placements; and a job register. Reported per kind, median of
--repeats: the whole append, the part after the events are encoded (the transaction), and the
time the lock was held (`EventStore.lock_held`: a large append inserts its events before the
lock) - on an idle process, and again beside a CPU-bound thread in the same process, as the
plan applier's commit runs beside its busy event loop (every round trip to the server then
also waits for the GIL).

    python -m bench.append --out bench/out/append.json
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.report import write
from bench.scheduler import NOW, build_cluster
from drover.model import Evaluation, Job, Resources, Task, TaskGroup
from drover.model.canonicalize import canonicalize
from drover.model.events import EvalsUpserted, Event, JobRegistered, NodeRegistered, encode_event_json
from drover.model.reducer import apply
from drover.model.state import InMemoryState
from drover.planner.applier import chunk
from drover.runtime.embedded import EmbeddedPostgres
from drover.runtime.store import EventStore, migrate
from drover.scheduler import schedule
from drover.scheduler.planapply import evaluate_plan, plan_applied_event
from drover.scheduler.wire import PlanRequest, decode_request, encode_request


def _job(job_id: str, count: int) -> Job:
    return canonicalize(
        Job(
            id=job_id,
            datacenters=["dc-1", "dc-2"],
            task_groups=[
                TaskGroup(
                    name="web",
                    count=count,
                    tasks=[Task(name="web", driver="docker", resources=Resources(cpu=100, memory_mb=64))],
                )
            ],
        )
    )


class Log:
    """The store and an in-memory replica of it, so plans are scheduled on the newest state."""

    def __init__(self, store: EventStore, state: InMemoryState) -> None:
        self.store = store
        self.state = state

    def append(self, events: list[Event]) -> tuple[float, float, float]:
        """Append as the plan applier does; (whole append, transaction, lock held) in ms."""
        held: list[float] = []
        self.store.lock_held = held.append
        t0 = time.perf_counter()
        for e in events:
            encode_event_json(e)  # what append does before its transaction
        t1 = time.perf_counter()
        recorded = self.store.append(events, owned=True)
        t2 = time.perf_counter()
        encode = t1 - t0
        for r in recorded:
            apply(self.state, r.position, r.event)
        return (t2 - t1) * 1e3, (t2 - t1 - encode) * 1e3, held[0] * 1e3

    def plan(self, job: Job) -> list[Event]:
        evaluation = Evaluation(
            id=f"eval-{job.id}", job_id=job.id, type=job.type, triggered_by="job-register"
        )
        res = schedule(self.state, evaluation, NOW)
        placed = sum(len(v) for v in res.plan.node_allocation.values())
        assert placed == job.task_groups[0].count, placed
        # As the plan applier gets it from a worker: its metrics as JSON, never decoded.
        req = decode_request(encode_request(PlanRequest(plan=res.plan, evals=[res.eval])))
        applied = plan_applied_event(evaluate_plan(self.state, req.plan), NOW)
        applied.metrics_json = req.metrics_json
        events: list[Event] = list(chunk(applied))
        events.append(EvalsUpserted(evals=req.evals))
        return events


def _summary(runs: list[tuple[float, float, float]]) -> dict[str, float]:
    return {
        "append_ms": round(statistics.median(r[0] for r in runs), 1),
        "transaction_ms": round(statistics.median(r[1] for r in runs), 1),
        "lock_held_ms": round(statistics.median(r[2] for r in runs), 1),
        "lock_held_max_ms": round(max(r[2] for r in runs), 1),
    }


def _busy(stop: threading.Event) -> None:
    """A CPU-bound thread: pure Python, never waiting, as a busy event loop is."""
    x = 0
    while not stop.is_set():
        for i in range(10_000):
            x += i


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/append.json")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--db", help="a database URL to use instead of an embedded server (must be empty)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="drover-append-") as tmp:
        pg = None
        if args.db:
            url = args.db
        else:
            pg = EmbeddedPostgres(Path(tmp) / "pg")
            url = pg.start()
        try:
            migrate(url)
            store = EventStore(url)
            cluster = build_cluster(5000, 25)
            log = Log(store, InMemoryState())
            nodes = [NodeRegistered(node=n) for n in cluster.nodes.values()]
            for i in range(0, len(nodes), 500):
                log.append(list(nodes[i : i + 500]))
            result: dict[str, Any] = {"benchmark": "append", "nodes": len(nodes), "repeats": args.repeats}
            for mode in ("idle", "beside_busy_thread"):
                stop = threading.Event()
                busy = threading.Thread(target=_busy, args=(stop,))
                if mode != "idle":
                    busy.start()
                big: list[tuple[float, float, float]] = []
                small: list[tuple[float, float, float]] = []
                register: list[tuple[float, float, float]] = []
                try:
                    for r in range(args.repeats):
                        for job_id, count, runs in (
                            (f"big-{mode}-{r}", 1000, big),
                            (f"probe-{mode}-{r}", 10, small),
                        ):
                            job = _job(job_id, count)
                            register.append(log.append([JobRegistered(job=job)]))
                            runs.append(log.append(log.plan(job)))
                finally:
                    stop.set()
                    if busy.is_alive():
                        busy.join()
                result[mode] = {
                    "plan_1000_allocs": _summary(big),
                    "plan_10_allocs": _summary(small),
                    "job_register": _summary(register),
                }
            store.close()
        finally:
            if pg is not None:
                pg.kill()
    write(result, args.out)


if __name__ == "__main__":
    main()
