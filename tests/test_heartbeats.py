"""Heartbeats end to end: every service its own process, TTLs shortened to seconds.

A node that stops heartbeating goes down after its TTL and grace, its allocs are lost and
replaced elsewhere; one running allocs that tolerate a disconnect goes disconnected instead and
keeps them when it comes back in time; a leader failover gives every node the failover TTL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .cluster import Cluster, job_json, node_auth, node_json

ENV = {
    "DROVER_HEARTBEAT_MIN_TTL": "1",
    "DROVER_HEARTBEAT_GRACE": "1",
    "DROVER_FAILOVER_HEARTBEAT_TTL": "6",
}


class Beater:
    """Heartbeats a set of nodes through the API every 0.3 s, as their clients would."""

    def __init__(self, base_url: str) -> None:
        self.nodes: set[str] = set()
        self.stop = threading.Event()
        self.http = httpx.Client(base_url=base_url, timeout=10, auth=node_auth())
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            if self.nodes:
                r = self.http.put("/v1/drover/heartbeats", json={"NodeIDs": sorted(self.nodes)})
                assert r.status_code == 200, r.text
            time.sleep(0.3)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.http.close()


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, leaders=2, env=ENV).start()
    yield c
    c.stop()


@pytest.fixture
def beater(cluster: Cluster) -> Iterator[Beater]:
    b = Beater(str(cluster.http.base_url))
    yield b
    b.close()


def live(c: Cluster, job_id: str) -> list[dict[str, Any]]:
    return [
        a
        for a in c.get(f"/v1/job/{job_id}/allocations")
        if a["DesiredStatus"] == "run" and a["ClientStatus"] not in ("complete", "failed", "lost")
    ]


def test_a_silent_node_goes_down_and_its_allocs_are_replaced(cluster: Cluster, beater: Beater) -> None:
    c = cluster
    for n in ("alive", "silent"):
        resp = c.put("/v1/drover/node/register", {"Node": node_json(n, cpu=1000)})
        assert resp["HeartbeatTTL"] >= 1_000_000_000
    beater.nodes.add("alive")
    c.put("/v1/jobs", job_json("web", 2, cpu=400))
    allocs = c.wait(lambda: len(a := live(c, "web")) == 2 and a)
    assert {a["NodeID"] for a in allocs} == {"alive", "silent"}
    on_silent = next(a["ID"] for a in allocs if a["NodeID"] == "silent")

    t0 = time.monotonic()
    node = c.wait(lambda: (n := c.get("/v1/node/silent"))["Status"] == "down" and n, timeout=15)
    # longest TTL handed out (2 x 1 s) + grace (1 s), with the heartbeater's own wake-ups
    assert time.monotonic() - t0 < 9
    assert node["StatusDescription"] == "Node heartbeat missed"
    assert c.get("/v1/node/alive")["Status"] == "ready"
    c.wait(lambda: c.get(f"/v1/allocation/{on_silent}")["ClientStatus"] == "lost")
    replaced = c.wait(lambda: len(a := live(c, "web")) == 2 and a)
    assert {a["NodeID"] for a in replaced} == {"alive"}
    evals = c.get("/v1/job/web/evaluations")
    assert any(e["TriggeredBy"] == "node-update" and e["NodeID"] == "silent" for e in evals)

    # The node's client comes back: ready again, through its heartbeat.
    beater.nodes.add("silent")
    c.wait(lambda: c.get("/v1/node/silent")["Status"] == "ready")


def test_a_node_running_tolerant_allocs_disconnects_and_keeps_them_when_back(
    cluster: Cluster, beater: Beater
) -> None:
    c = cluster
    c.put("/v1/drover/node/register", {"Node": node_json("edge", cpu=1000)})
    c.put("/v1/drover/node/register", {"Node": node_json("spare", cpu=1000)})
    beater.nodes.add("spare")
    job = job_json("tolerant", 1, cpu=400)
    job["Job"]["Constraints"] = [{"LTarget": "${node.unique.id}", "RTarget": "edge", "Operand": "="}]
    # No replacement while it is away (replace false): on return the original alone runs. (With
    # a replacement, its unblocking races the reconnect; the choice between them is unit-tested.)
    job["Job"]["TaskGroups"][0]["Disconnect"] = {"LostAfter": 60_000_000_000, "Replace": False}
    c.put("/v1/jobs", job)
    (alloc,) = c.wait(lambda: live(c, "tolerant"))
    assert alloc["NodeID"] == "edge"
    # Only running allocs disconnect (a pending one is lost, as in Nomad): the client says so.
    running = {"NodeID": "edge", "Updates": [{"ID": alloc["ID"], "ClientStatus": "running"}]}
    c.put("/v1/drover/allocs/status", running)

    node = c.wait(lambda: (n := c.get("/v1/node/edge"))["Status"] == "disconnected" and n, timeout=15)
    assert node["StatusDescription"] == "Node heartbeat missed"
    c.wait(lambda: c.get(f"/v1/allocation/{alloc['ID']}")["ClientStatus"] == "unknown")

    beater.nodes.add("edge")
    c.wait(lambda: c.get("/v1/node/edge")["Status"] == "ready")
    c.put("/v1/drover/allocs/status", running)  # the client, back, reports what it runs
    # the original alloc is kept, running on edge, and nothing else runs
    c.wait(
        lambda: [(a["ID"], a["ClientStatus"]) for a in live(c, "tolerant")] == [(alloc["ID"], "running")],
        timeout=20,
        describe=lambda: [
            (a["ID"], a["NodeID"], a["DesiredStatus"], a["ClientStatus"])
            for a in c.get("/v1/job/tolerant/allocations")
        ],
    )
    assert c.get(f"/v1/allocation/{alloc['ID']}")["DesiredStatus"] == "run"


def test_standby_leader_takes_over_with_the_failover_ttl(cluster: Cluster, beater: Beater) -> None:
    c = cluster
    for n in ("kept", "silent"):
        c.put("/v1/drover/node/register", {"Node": node_json(n)})
    beater.nodes.add("kept")
    c.wait(lambda: c.get("/v1/node/silent")["Status"] == "down", timeout=15)  # the leader works
    # The leader dies and "kept" stops beating at the same moment. Without a failover TTL the
    # standby would mark it down within its TTL + grace (<= 3 s); with it, not before 6 s.
    leader = next(i for i in (0, 1) if "is the leader" in (c.log_dir / f"leader-{i}.log").read_text())
    beater.nodes.clear()
    c.kill("leader", leader)
    t0 = time.monotonic()
    c.wait(lambda: c.get("/v1/node/kept")["Status"] == "down", timeout=20, interval=0.1)
    took = time.monotonic() - t0
    assert 6.0 <= took < 12.0, took
    assert "is the leader" in (c.log_dir / f"leader-{1 - leader}.log").read_text()


def test_heartbeat_bad_input(cluster: Cluster) -> None:
    c = cluster
    index = c.http.get("/v1/nodes").headers["X-Nomad-Index"]
    r = c.http.put("/v1/drover/node/nope/heartbeat")
    assert r.status_code == 404 and "nope" in r.text
    for body in ({}, {"NodeIDs": []}, {"NodeIDs": [""]}, {"NodeIDs": "x"}):
        r = c.http.put("/v1/drover/heartbeats", json=body)
        assert r.status_code == 400, body
    assert c.http.get("/v1/nodes").headers["X-Nomad-Index"] == index
