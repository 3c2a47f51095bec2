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
import re
import shutil
import socket
import tempfile
import threading
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
from drover.model.allocated import (
    AllocatedCpuResources,
    AllocatedMemoryResources,
    AllocatedResources,
    AllocatedTaskResources,
)
from drover.runtime.embedded import EmbeddedPostgres
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, migrate
from tests.cluster import job_json, node_json

NOW = 1_700_000_000_000_000_000
# The nodes are spread over this many datacenters (the topology page groups by them).
DATACENTERS = 5


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
                doc = Node.model_validate(node_json(nid, dc=f"dc{1 + i * DATACENTERS // nodes}")).model_copy(
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
        given = AllocatedResources(tasks={"web": AllocatedTaskResources(
            cpu=AllocatedCpuResources(cpu_shares=100), memory=AllocatedMemoryResources(memory_mb=128))})  # fmt: skip
        alloc_ids = []
        with cur.copy(
            "COPY allocs (id, namespace, job_id, node_id, eval_id, doc, modify_index, desired_status, client_status, "
            "task_group) FROM STDIN"
        ) as copy:
            for i in range(per_job * jobs):
                jid, nid = job_ids[i // per_job], node_ids[rnd.randrange(nodes)]
                a = Allocation(id=str(uuid.UUID(int=rnd.getrandbits(128))), job_id=jid, node_id=nid, node_name=nid,
                               task_group="web", name=f"{jid}.web[{i % per_job}]", client_status="running",
                               task_states={"web": state}, allocated_resources=given, create_index=i + 1, modify_index=i + 1,
                               create_time=NOW, modify_time=NOW)  # fmt: skip
                alloc_ids.append(a.id)
                copy.write_row((a.id, "default", jid, nid, "", a.model_dump_json(by_alias=True), i + 1, "run",
                                "running", "web"))  # fmt: skip
        # The log's position past every row's ModifyIndex, as in a cluster whose log wrote them.
        cur.execute("INSERT INTO events (position, stream, version, type, data, protocol) "
                    "VALUES (%s, 'bench', 1, 'BenchSeeded', '{}', 2)", (per_job * jobs + jobs + nodes + 1,))  # fmt: skip
        raw.commit()
    finally:
        raw.close()
    with store.engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
    return {"job": job_ids[jobs // 2], "alloc": alloc_ids[len(alloc_ids) // 2], "node": node_ids[nodes // 2]}


def measure(client: TestClient, pg: EmbeddedPostgres, path: str, n: int) -> dict[str, float]:
    """The API's and PostgreSQL's CPU and the wall time per request of `path`, over `n`."""
    cpu0, db0, wall0 = time.process_time(), tree_cpu_seconds(pg.proc.pid), time.perf_counter()  # type: ignore[union-attr]
    for _ in range(n):
        client.get(path)
    return {
        "api_cpu_ms": round((time.process_time() - cpu0) / n * 1000, 1),
        "db_cpu_ms": round((tree_cpu_seconds(pg.proc.pid) - db0) / n * 1000, 1),  # type: ignore[union-attr]
        "wall_ms": round((time.perf_counter() - wall0) / n * 1000, 1),
    }


def first_topology(client: TestClient, pg: EmbeddedPostgres) -> dict[str, float]:
    """The topology's first page of the process: every alloc's document read once."""
    out = measure(client, pg, "/ui/topology", 1)
    out["html_kb"] = round(len(client.get("/ui/topology").content) / 1024)
    return out


def moved_topology(
    client: TestClient, pg: EmbeddedPostgres, store: EventStore, n: int = 5
) -> dict[str, float]:
    """A page after each of `n` changes (an alloc moved to another node, at a new log position,
    as a plan writes it): the rows changed are read, the two nodes' boxes drawn again."""
    totals = {"api_cpu_ms": 0.0, "db_cpu_ms": 0.0, "wall_ms": 0.0}
    for i in range(n):
        with store.engine.begin() as conn:
            pos = int(conn.exec_driver_sql("SELECT coalesce(max(position), 0) + 1 FROM events").scalar_one())
            conn.exec_driver_sql(
                "INSERT INTO events (position, stream, version, type, data, protocol) "
                "VALUES (%s, %s, 1, 'BenchMoved', '{}', 2)", (pos, f"bench:{pos}"))  # fmt: skip
            conn.exec_driver_sql(
                "UPDATE allocs SET node_id = %s, modify_index = %s "
                "WHERE id = (SELECT id FROM allocs ORDER BY id OFFSET %s LIMIT 1)", (f"node-{i:05d}", pos, i * 97))  # fmt: skip
        for k, v in measure(client, pg, "/ui/topology", 1).items():
            totals[k] += v / n
    return {k: round(v, 1) for k, v in totals.items()}


def _group_url(html: str) -> str:
    """The first group fragment's URL on a topology page."""
    found = re.search(r'hx-get="(/ui/topology\?fragment=group[^"]*)"', html)
    assert found, "no group fragment on the topology page"
    return found.group(1).replace("&amp;", "&")


def browser_topology(app: Any, runs: int = 3) -> dict[str, float]:
    """Chromium's time to draw the topology: from navigation start to the first frame painted
    after the page loaded (a requestAnimationFrame after `load`), the best and worst of `runs`,
    the page served by uvicorn on the loopback."""
    if not Path(CHROMIUM).exists():
        return {"skipped": 1.0}
    import uvicorn
    from playwright.sync_api import sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        times = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(60_000)
            page.goto(f"http://127.0.0.1:{port}/ui/topology", wait_until="load")  # this app's first read
            for _ in range(runs):
                page.goto(f"http://127.0.0.1:{port}/ui/topology", wait_until="load")
                times.append(page.evaluate(DRAWN))
            boxes = page.locator(".tnode").count()
            browser.close()
        return {"drawn_ms_best": round(min(times)), "drawn_ms_worst": round(max(times)), "boxes": boxes}
    finally:
        server.should_exit = True
        thread.join(timeout=10)


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
]
# Milliseconds from navigation start to the next frame after `load` (the boxes laid out and painted).
DRAWN = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))))"


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
            "topology": "/ui/topology",
        }
        settings = Settings(database_url=url, nats_url="nats://unused")
        results: dict[str, Any] = {}
        with TestClient(create_app(settings, store)) as client:
            results["topology (first read)"] = first_topology(client, pg)
            for name, path in pages.items():
                assert client.get(path).status_code == 200, path  # warm
                results[name] = measure(client, pg, path, args.requests)
                print(f"{name:28s} api {results[name]['api_cpu_ms']:6.1f} ms  db {results[name]['db_cpu_ms']:6.1f} ms"
                      f"  wall {results[name]['wall_ms']:6.1f} ms")  # fmt: skip
            results["topology (after an alloc moved)"] = moved_topology(client, pg, store)
            group = _group_url(client.get("/ui/topology").text)
            results["topology fragment (group, unchanged)"] = measure(client, pg, group, args.requests)
            results["topology in the browser"] = browser_topology(create_app(settings, store))
        for name, r in results.items():
            print(f"{name:36s} " + "  ".join(f"{k} {v}" for k, v in r.items()))
        store.close()
        scale = {"jobs": args.jobs, "nodes": args.nodes, "allocs": args.allocs}
        report.write({"scale": scale, "pages": results, "cpus": os.cpu_count()}, args.out)
    finally:
        pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
