"""Draining a node end to end: 6 allocs with migrate max_parallel 2 leave in batches, never
more than 2 in flight, all end on other nodes, the node ends ineligible and empty."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .cluster import Cluster, job_json, node_auth, node_json


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path).start()
    yield c
    c.stop()


class FakeClients:
    """Stands in for the nodes' agents: reports every new alloc running, `delay` seconds after
    it is seen (a replacement takes a moment to start)."""

    def __init__(self, base_url: str, delay: float = 0.3) -> None:
        self.delay = delay
        self.http = httpx.Client(base_url=base_url, timeout=10, auth=node_auth())
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            pending = [
                a["ID"]
                for a in self.http.get("/v1/allocations").json()
                if a["DesiredStatus"] == "run" and a["ClientStatus"] == "pending"
            ]
            if pending:
                time.sleep(self.delay)
                updates = [{"ID": i, "ClientStatus": "running"} for i in pending]
                self.http.put("/v1/drover/allocs/status", json={"Updates": updates})
            time.sleep(0.1)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.http.close()


def in_flight(allocs: list[dict[str, Any]], node_id: str) -> int:
    """Allocs marked to migrate but not stopped yet, plus replacements not yet running."""
    by_id = {a["ID"]: a for a in allocs}
    marked = [
        a
        for a in allocs
        if a["NodeID"] == node_id
        and a["DesiredStatus"] == "run"
        and (a.get("DesiredTransition") or {}).get("Migrate")
    ]
    starting = [
        a
        for a in allocs
        if a["NodeID"] != node_id
        and a["DesiredStatus"] == "run"
        and a["ClientStatus"] != "running"
        and by_id.get(a.get("PreviousAllocation", ""), {}).get("NodeID") == node_id
    ]
    return len(marked) + len(starting)


def test_drain_moves_allocs_in_batches_of_max_parallel(cluster: Cluster) -> None:
    c = cluster
    c.put("/v1/drover/node/register", {"Node": node_json("busy")})
    job = job_json("web", 6, cpu=100, mem=64)
    job["Job"]["Update"] = {"MaxParallel": 0}
    job["Job"]["TaskGroups"][0]["Migrate"] = {"MaxParallel": 2}
    c.put("/v1/jobs", job)
    c.wait(lambda: len([a for a in c.get("/v1/job/web/allocations") if a["NodeID"] == "busy"]) == 6)
    clients = FakeClients(str(c.http.base_url))
    try:
        c.wait(lambda: all(a["ClientStatus"] == "running" for a in c.get("/v1/job/web/allocations")))
        for n in ("spare-1", "spare-2"):
            c.put("/v1/drover/node/register", {"Node": node_json(n)})

        resp = c.put("/v1/node/busy/drain", {"DrainSpec": {"Deadline": 0, "IgnoreSystemJobs": False}})
        assert resp["NodeModifyIndex"] > 0
        assert c.get("/v1/node/busy")["SchedulingEligibility"] == "ineligible"
        most = 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            allocs = c.get("/v1/job/web/allocations")
            most = max(most, in_flight(allocs, "busy"))
            live = [a for a in allocs if a["DesiredStatus"] == "run" and a["ClientStatus"] == "running"]
            if (
                len(live) == 6
                and all(a["NodeID"] != "busy" for a in live)
                and c.get("/v1/node/busy")["DrainStrategy"] is None
            ):
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"drain did not finish\n{c.logs()}")
        assert 1 <= most <= 2, most
        node = c.get("/v1/node/busy")
        assert node["SchedulingEligibility"] == "ineligible" and node["DrainStrategy"] is None
        assert c.get("/v1/node/busy/allocations") and all(
            a["DesiredStatus"] != "run" for a in c.get("/v1/node/busy/allocations")
        )
        evals = c.get("/v1/job/web/evaluations")
        assert sum(1 for e in evals if e["TriggeredBy"] == "node-drain") >= 3  # one per batch
    finally:
        clients.close()


def test_drain_bad_input(cluster: Cluster) -> None:
    c = cluster
    c.put("/v1/drover/node/register", {"Node": node_json("n1")})
    index = c.http.get("/v1/nodes").headers["X-Nomad-Index"]
    assert c.http.put("/v1/node/nope/drain", json={"DrainSpec": {"Deadline": 0}}).status_code == 404
    r = c.http.put("/v1/node/n1/drain", json={"DrainSpec": {"Deadline": "soon", "IgnoreSystemJobs": "yes"}})
    assert r.status_code == 400 and "Deadline" in r.text and "IgnoreSystemJobs" in r.text
    assert c.http.put("/v1/node/n1/drain", json=[1]).status_code == 400
    assert c.http.get("/v1/nodes").headers["X-Nomad-Index"] == index
    # and a drain can be cancelled, the node made eligible again
    c.put("/v1/node/n1/drain", {"DrainSpec": {"Deadline": 60_000_000_000}})
    assert c.get("/v1/node/n1")["DrainStrategy"]["ForceDeadline"] > 0
    c.put("/v1/node/n1/drain", {"DrainSpec": None, "MarkEligible": True})
    node = c.get("/v1/node/n1")
    assert node["DrainStrategy"] is None and node["SchedulingEligibility"] == "eligible"
