"""Blocking-query benchmark: what many waiting clients cost while jobs are placed.

Every service runs as its own process on embedded NATS and PostgreSQL. --nodes nodes are
registered (and kept alive by batched heartbeats) and each gets a client that waits on its
node's allocs with blocking queries (`/v1/node/:id/allocations?index=&wait=`), as a Nomad
client agent does. Then --jobs jobs of one alloc each are registered one after another, each
waited for until placed. Reported: the log positions the load added, how many answers the
waiting clients got (all of them, and per commit), the share that showed their node's allocs
changed, the API's and Postgres's CPU seconds during the load, and how long after a job's
register its node's client saw the alloc (p50/p99).

    python -m bench.watchers --out bench/out/watchers.json [--nodes 500 --jobs 40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from bench import report
from bench.pipeline import cpu_seconds, tree_cpu_seconds
from bench.report import percentile
from bench.servers import start
from drover.runtime.store import EventStore
from tests.cluster import job_json, node_auth, node_json


async def _watch(
    http: httpx.AsyncClient,
    node_id: str,
    stop: asyncio.Event,
    seen: dict[str, float],
    counts: list[int],
    ready: set[str],
) -> None:
    """One client agent: wait on the node's allocs, note when a new alloc first shows."""
    index, known = 1, set[str]()
    while not stop.is_set():
        try:
            r = await http.get(f"/v1/node/{node_id}/allocations", params={"index": index, "wait": "30s"})
        except httpx.HTTPError:
            continue
        index = int(r.headers.get("X-Nomad-Index", index))
        ready.add(node_id)
        counts[0] += 1
        ids = {a["ID"]: a["JobID"] for a in r.json()}
        new = set(ids) - known
        if new:
            counts[1] += 1
            for alloc_id in new:
                seen.setdefault(ids[alloc_id], time.monotonic())
            known |= new


async def _load(
    base: str, nodes: list[str], jobs: int, store: EventStore, cpu: Callable[[], dict[str, float]]
) -> dict[str, Any]:
    stop = asyncio.Event()
    seen: dict[str, float] = {}
    counts = [0, 0]  # answers, answers that showed a new alloc
    limits = httpx.Limits(max_connections=len(nodes) + 10, max_keepalive_connections=len(nodes) + 10)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
        ready: set[str] = set()
        watchers = [asyncio.create_task(_watch(http, n, stop, seen, counts, ready)) for n in nodes]
        deadline = time.monotonic() + 120
        while len(ready) < len(nodes) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # every client has had its first answer and waits again
        counts[:] = [0, 0]
        cpu0 = cpu()
        before = await asyncio.to_thread(store.last_position)
        registered: dict[str, float] = {}
        t0 = time.monotonic()
        for j in range(jobs):
            job_id = f"job-{j:03d}"
            registered[job_id] = time.monotonic()
            (await http.put("/v1/jobs", json=job_json(job_id, 1, cpu=100, mem=64))).raise_for_status()
            deadline = time.monotonic() + 30
            while job_id not in seen and time.monotonic() < deadline:
                await asyncio.sleep(0.005)
        took = time.monotonic() - t0
        used = {k: round(v - cpu0[k], 2) for k, v in cpu().items()}
        after = await asyncio.to_thread(store.last_position)
        answers, changed = counts
        stop.set()
        for w in watchers:
            w.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
    latencies = [seen[j] - t for j, t in registered.items() if j in seen]
    commits = after - before
    return {
        "load_s": round(took, 2),
        "jobs_seen_by_their_node": len(latencies),
        "log_positions_added": commits,
        "answers": answers,
        "answers_per_position": round(answers / max(commits, 1), 1),
        "answers_showing_a_new_alloc": changed,
        "register_to_seen_by_node_ms": {
            "p50": round(statistics.median(latencies) * 1000, 1) if latencies else None,
            "p99": round(percentile(latencies, 0.99) * 1000, 1) if latencies else None,
        },
        "cpu_s_during_load": used,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/watchers.json")
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--jobs", type=int, default=40)
    args = ap.parse_args()
    servers = start(workers=2, planners=1)
    cluster, store = servers.cluster, servers.store
    base = str(cluster.http.base_url)
    nodes = [f"node-{i:04d}" for i in range(args.nodes)]
    beating = threading.Event()

    def heartbeat() -> None:
        with httpx.Client(base_url=base, timeout=60, auth=node_auth()) as h:
            while not beating.wait(3.0):
                h.put("/v1/drover/heartbeats", json={"NodeIDs": nodes}).raise_for_status()

    try:
        with httpx.Client(base_url=base, timeout=60) as h:
            for n in nodes:
                h.put("/v1/drover/node/register", json={"Node": node_json(n)}).raise_for_status()
        threading.Thread(target=heartbeat, daemon=True).start()
        api, postgres = cluster.procs["api"][0].pid, dict(servers.server_pids()).get("postgres", 0)

        def cpu() -> dict[str, float]:
            return {"api": cpu_seconds(api), "postgres": tree_cpu_seconds(postgres)}

        result: dict[str, Any] = {"benchmark": "watchers", "nodes": args.nodes, "jobs": args.jobs}
        result |= asyncio.run(_load(base, nodes, args.jobs, store, cpu))
    finally:
        beating.set()
        servers.stop()
    report.write(result, args.out)


if __name__ == "__main__":
    main()
