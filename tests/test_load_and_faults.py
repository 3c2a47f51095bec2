"""Concurrency and failures with every service as its own process: many clients at once on a
small cluster, kill -9 of a worker and of the active plan applier, a NATS restart. Afterwards the
log itself must show no over-committed node at any index, no eval lost, no alloc duplicated."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from drover.runtime.embedded import EmbeddedNats
from drover.runtime.store import EventStore

from .cluster import Cluster, job_json, node_json
from .invariants import check_log, live_names_unique

SETTLED = {"complete", "failed", "canceled", "blocked"}


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, workers=2, planners=2).start()
    yield c
    c.stop()


def settled(c: Cluster) -> bool:
    evals = c.get("/v1/evaluations")
    return bool(evals) and all(e["Status"] in SETTLED for e in evals)


def register_many(c: Cluster, clients: int, jobs_per_client: int, count: int, cpu: int) -> None:
    def client(k: int) -> None:
        with httpx.Client(base_url=str(c.http.base_url), timeout=30) as h:
            for j in range(jobs_per_client):
                r = h.put("/v1/jobs", json=job_json(f"job-{k}-{j}", count, cpu=cpu))
                assert r.status_code == 200, r.text

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))


def test_many_clients_on_a_small_cluster(cluster: Cluster, store: EventStore) -> None:
    c = cluster
    for i in range(3):
        c.put("/v1/drover/node/register", {"Node": node_json(f"n{i}", cpu=4000, mem=8192)})
    register_many(c, clients=10, jobs_per_client=5, count=3, cpu=500)  # 150 allocs, room for 24
    c.wait(lambda: settled(c), timeout=60, interval=0.2)
    time.sleep(1.0)
    assert settled(c)
    state = check_log(store)
    live_names_unique(state)
    placed = sum(1 for a in state.allocs.values() if not a.terminal_status())
    assert placed == 24  # every node full, none over
    blocked = [e for e in state.evals.values() if e.status == "blocked"]
    assert blocked and len({e.job_id for e in blocked}) == len(blocked)  # one per job


def converged(c: Cluster, jobs: list[str], count: int) -> bool:
    for j in jobs:
        live = [a for a in c.get(f"/v1/job/{j}/allocations") if a["DesiredStatus"] == "run"]
        if len(live) != count:
            return False
    return settled(c)


def test_kill_worker_and_active_planner_mid_load(cluster: Cluster, store: EventStore) -> None:
    c = cluster
    for i in range(10):
        c.put("/v1/drover/node/register", {"Node": node_json(f"n{i}", cpu=16000, mem=32768)})
    jobs = [f"job-{k}-{j}" for k in range(5) for j in range(4)]
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(register_many, c, 5, 4, 5, 200)
        time.sleep(0.3)
        c.kill("worker", 0)
        leader = next(i for i in range(2) if "is the leader" in (c.log_dir / f"planner-{i}.log").read_text())
        c.kill("planner", leader)
        fut.result()
    c.spawn("worker")
    # The standby takes over, and commits what comes after: on a fast host the load can be
    # all placed before the kill, so a job registered after the takeover proves it.
    standby = 1 - leader
    c.wait(lambda: "is the leader" in (c.log_dir / f"planner-{standby}.log").read_text(), timeout=30)
    c.put("/v1/jobs", job_json("after-takeover", 5, cpu=200))
    jobs.append("after-takeover")
    c.wait(lambda: converged(c, jobs, 5), timeout=60, interval=0.3)
    state = check_log(store)
    live_names_unique(state)
    assert all(e.status in SETTLED for e in state.evals.values())


def test_nats_restart_mid_load(cluster: Cluster, store: EventStore, nats_server: EmbeddedNats | str) -> None:
    if isinstance(nats_server, str):
        pytest.fail("this test restarts NATS: it needs the harness's own server, not DROVER_NATS_URL")
    c = cluster
    for i in range(5):
        c.put("/v1/drover/node/register", {"Node": node_json(f"n{i}", cpu=16000, mem=32768)})
    register_many(c, 2, 3, 3, 200)
    nats_server.stop()
    time.sleep(1.0)
    nats_server.start()
    register_many(c, 2, 3, 3, 200)  # same job IDs: re-registered unchanged, new evals
    jobs = [f"job-{k}-{j}" for k in range(2) for j in range(3)]
    more = [f"late-{i}" for i in range(3)]
    for j in more:
        c.put("/v1/jobs", job_json(j, 3, cpu=200))
    c.wait(lambda: converged(c, jobs + more, 3), timeout=60, interval=0.3)
    state = check_log(store)
    live_names_unique(state)


def test_broker_restart_rebuilds_its_queue_from_the_log(cluster: Cluster, store: EventStore) -> None:
    c = cluster
    for i in range(4):
        c.put("/v1/drover/node/register", {"Node": node_json(f"n{i}", cpu=16000, mem=32768)})
    c.kill("broker", 0)
    # Registered while no broker runs: only the log knows about these evals.
    jobs = [f"queued-{i}" for i in range(6)]
    for j in jobs:
        c.put("/v1/jobs", job_json(j, 2, cpu=200))
    c.spawn("broker")
    c.wait(lambda: converged(c, jobs, 2), timeout=60, interval=0.3)
    live_names_unique(check_log(store))
