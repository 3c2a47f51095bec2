"""Web console benchmark: what a page costs the API process at the issue's scale - 10,000 jobs,
5,000 nodes, 100,000 allocs (and an eval per job) in the projections - and PostgreSQL beside it.

The projections are written directly (COPY), the documents made by the model as the reducer
writes them; the API runs in this process (FastAPI's TestClient), each page requested --requests
times; reported per page: the API's CPU (this process: user + system, the test client's share
included) and PostgreSQL's (its processes' CPU) per render, and the wall time.

    python -m bench.ui --out bench/out/ui.json [--jobs 10000 --nodes 5000 --allocs 100000]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from bench import report
from bench.pipeline import tree_cpu_seconds
from drover.api.app import create_app
from drover.model import Allocation, Evaluation, Job, Node
from drover.model.alloc import TaskEvent, TaskState
from drover.runtime.embedded import EmbeddedPostgres
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, migrate
from tests.cluster import job_json, node_json

NOW = 1_700_000_000_000_000_000


def seed(store: EventStore, jobs: int, nodes: int, allocs: int) -> dict[str, str]:
    """The projections at scale; answers a job, an alloc and a node to open."""
    rnd = random.Random(7)
    node_ids = [f"node-{i:05d}" for i in range(nodes)]
    job_ids = [f"svc-{i:05d}" for i in range(jobs)]
    per_job = max(1, allocs // jobs)
    raw = store.engine.raw_connection()
    try:
        cur = raw.cursor()
        with cur.copy("COPY nodes (id, doc, modify_index) FROM STDIN") as copy:
            for i, nid in enumerate(node_ids):
                doc = Node.model_validate(node_json(nid)).model_copy(
                    update={"create_index": i + 1, "modify_index": i + 1}
                )
                copy.write_row((nid, doc.model_dump_json(by_alias=True), i + 1))
        job_docs = {jid: Job.model_validate(job_json(jid, per_job)["Job"]) for jid in job_ids[:1]}
        template = job_docs[job_ids[0]]
        with cur.copy("COPY jobs (namespace, id, doc, modify_index) FROM STDIN") as copy:
            for i, jid in enumerate(job_ids):
                doc = template.model_copy(update={"id": jid, "name": jid, "create_index": i + 1, "modify_index": i + 1,
                                                  "job_modify_index": i + 1, "submit_time": NOW})  # fmt: skip
                copy.write_row(("default", jid, doc.model_dump_json(by_alias=True), i + 1))
        with cur.copy("COPY evals (id, namespace, job_id, status, doc, modify_index) FROM STDIN") as copy:
            for i, jid in enumerate(job_ids):
                ev = Evaluation(id=str(uuid.UUID(int=rnd.getrandbits(128))), job_id=jid, status="complete",
                                triggered_by="job-register", create_index=i + 1, modify_index=i + 1, create_time=NOW)  # fmt: skip
                copy.write_row((ev.id, "default", jid, "complete", ev.model_dump_json(by_alias=True), i + 1))
        events = [TaskEvent(type=t, time=NOW, message=t) for t in ("Received", "Task Setup", "Started")]
        state = TaskState(state="running", started_at=NOW, events=events)
        alloc_ids = []
        with cur.copy(
            "COPY allocs (id, namespace, job_id, node_id, eval_id, doc, modify_index, desired_status, client_status, "
            "task_group) FROM STDIN"
        ) as copy:
            for i in range(per_job * jobs):
                jid, nid = job_ids[i // per_job], node_ids[rnd.randrange(nodes)]
                a = Allocation(id=str(uuid.UUID(int=rnd.getrandbits(128))), job_id=jid, node_id=nid, node_name=nid,
                               task_group="web", name=f"{jid}.web[{i % per_job}]", client_status="running",
                               task_states={"web": state}, create_index=i + 1, modify_index=i + 1,
                               create_time=NOW, modify_time=NOW)  # fmt: skip
                alloc_ids.append(a.id)
                copy.write_row((a.id, "default", jid, nid, "", a.model_dump_json(by_alias=True), i + 1, "run",
                                "running", "web"))  # fmt: skip
        raw.commit()
    finally:
        raw.close()
    with store.engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
    return {"job": job_ids[jobs // 2], "alloc": alloc_ids[len(alloc_ids) // 2], "node": node_ids[nodes // 2]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/ui.json")
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--nodes", type=int, default=5_000)
    ap.add_argument("--allocs", type=int, default=100_000)
    ap.add_argument("--requests", type=int, default=20)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="drover-ui-"))
    pg = EmbeddedPostgres(tmp / "pg", durable=False)
    try:
        url = pg.start()
        migrate(url)
        store = EventStore(url)
        t0 = time.perf_counter()
        some = seed(store, args.jobs, args.nodes, args.allocs)
        print(f"seeded in {time.perf_counter() - t0:.1f} s")
        pages = {
            "overview": "/ui/",
            "jobs": "/ui/jobs",
            "jobs (status=pending)": "/ui/jobs?status=pending",
            "jobs (search)": "/ui/jobs?q=999",
            "job": f"/ui/jobs/{some['job']}@default",
            "job fragment (allocations)": f"/ui/jobs/{some['job']}@default?fragment=allocations",
            "allocation": f"/ui/allocations/{some['alloc']}",
            "nodes": "/ui/nodes",
            "node": f"/ui/nodes/{some['node']}",
            "evaluations": "/ui/evaluations",
        }
        settings = Settings(database_url=url, nats_url="nats://unused")
        results: dict[str, Any] = {}
        with TestClient(create_app(settings, store)) as client:
            for name, path in pages.items():
                assert client.get(path).status_code == 200, path  # warm
                cpu0, db0, wall0 = time.process_time(), tree_cpu_seconds(pg.proc.pid), time.perf_counter()  # type: ignore[union-attr]
                for _ in range(args.requests):
                    client.get(path)
                n = args.requests
                results[name] = {
                    "api_cpu_ms": round((time.process_time() - cpu0) / n * 1000, 1),
                    "db_cpu_ms": round((tree_cpu_seconds(pg.proc.pid) - db0) / n * 1000, 1),  # type: ignore[union-attr]
                    "wall_ms": round((time.perf_counter() - wall0) / n * 1000, 1),
                }
                print(f"{name:28s} api {results[name]['api_cpu_ms']:6.1f} ms  db {results[name]['db_cpu_ms']:6.1f} ms"
                      f"  wall {results[name]['wall_ms']:6.1f} ms")  # fmt: skip
        store.close()
        scale = {"jobs": args.jobs, "nodes": args.nodes, "allocs": args.allocs}
        report.write({"scale": scale, "pages": results, "cpus": os.cpu_count()}, args.out)
    finally:
        pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
