"""The eval triggers (TriggeredBy) that follow nodes, each caused through the public API with every service
its own process (heartbeat TTLs shortened to seconds): node-update (a node registers, a client
says its node is down), node-drain, max-disconnect-timeout and reconnect. Each test asserts the
eval's TriggeredBy, its status and its links (PreviousEval, NextEval, BlockedEval, WaitUntil)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.model.durations import SECOND

from .cluster import Cluster, job_json, node_json
from .evals import NO_LINKS, FakeClients, links, wait_eval, wait_trigger
from .test_heartbeats import ENV, Beater


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, env=ENV).start()
    yield c
    c.stop()


@pytest.fixture
def beater(cluster: Cluster) -> Iterator[Beater]:
    b = Beater(str(cluster.http.base_url))
    yield b
    b.close()


@pytest.fixture
def clients(cluster: Cluster) -> Iterator[FakeClients]:
    f = FakeClients(str(cluster.http.base_url))
    yield f
    f.close()


def node(c: Cluster, beater: Beater, node_id: str, *, beats: bool = True) -> None:
    c.put("/v1/drover/node/register", {"Node": node_json(node_id)})
    if beats:
        beater.nodes.add(node_id)


def plain_job(job_id: str, count: int, **group: Any) -> dict[str, Any]:
    """A service job without an update block (no deployment)."""
    job = job_json(job_id, count)
    job["Job"]["Update"] = {"MaxParallel": 0}
    job["Job"]["TaskGroups"][0].update(group)
    return job


def running(c: Cluster, job_id: str) -> list[dict[str, Any]]:
    return [
        a
        for a in c.get(f"/v1/job/{job_id}/allocations")
        if a["DesiredStatus"] == "run" and a["ClientStatus"] == "running"
    ]


def test_node_update(cluster: Cluster, beater: Beater) -> None:
    """A node that registers ready, and a node its client says is down, get one node-update
    eval per system job that may run on them."""
    c = cluster
    node(c, beater, "n1")
    system = job_json("sys", 1, cpu=100)
    system["Job"]["Type"] = "system"
    wait_eval(c, c.put("/v1/jobs", system)["EvalID"])

    node(c, beater, "n2")
    (joined,) = wait_trigger(c, "sys", "node-update")
    joined = wait_eval(c, joined["ID"])
    assert joined["NodeID"] == "n2" and links(joined) == NO_LINKS
    (placed,) = [a for a in c.get("/v1/job/sys/allocations") if a["NodeID"] == "n2"]
    assert placed["EvalID"] == joined["ID"]

    beater.nodes.discard("n2")
    c.put("/v1/drover/node/n2/status", {"Status": "down"})
    left = wait_trigger(c, "sys", "node-update", 2)[1]
    left = wait_eval(c, left["ID"])
    assert left["NodeID"] == "n2" and links(left) == NO_LINKS
    lost = c.get(f"/v1/allocation/{placed['ID']}")
    assert lost["DesiredStatus"] == "stop" and lost["ClientStatus"] == "lost"


def test_node_drain(cluster: Cluster, beater: Beater, clients: FakeClients) -> None:
    c = cluster
    node(c, beater, "busy")
    wait_eval(c, c.put("/v1/jobs", plain_job("web", 2, Migrate={"MaxParallel": 2}))["EvalID"])
    old = c.wait(lambda: len(r := running(c, "web")) == 2 and r)
    node(c, beater, "spare")

    c.put("/v1/node/busy/drain", {"DrainSpec": {"Deadline": 0, "IgnoreSystemJobs": False}})
    (drain,) = wait_trigger(c, "web", "node-drain")
    drain = wait_eval(c, drain["ID"])
    assert drain["NodeID"] == "busy" and links(drain) == NO_LINKS
    moved = c.wait(lambda: len(r := [a for a in running(c, "web") if a["NodeID"] == "spare"]) == 2 and r)
    assert {a["EvalID"] for a in moved} == {drain["ID"]}
    assert sorted(a["PreviousAllocation"] for a in moved) == sorted(a["ID"] for a in old)


def test_max_disconnect_timeout(cluster: Cluster, beater: Beater, clients: FakeClients) -> None:
    """An alloc that tolerates a disconnect goes unknown when its node misses its heartbeat; the
    node-update eval creates a max-disconnect-timeout eval due when lost_after runs out, which
    replaces it."""
    c = cluster
    node(c, beater, "edge", beats=False)
    job = plain_job("tolerant", 1, Disconnect={"LostAfter": 3 * SECOND, "Replace": False})
    wait_eval(c, c.put("/v1/jobs", job)["EvalID"])
    (alloc,) = c.wait(lambda: running(c, "tolerant"))
    assert alloc["NodeID"] == "edge"
    node(c, beater, "spare")

    c.wait(lambda: c.get("/v1/node/edge")["Status"] == "disconnected", timeout=15)
    (update,) = wait_trigger(c, "tolerant", "node-update")
    update = wait_eval(c, update["ID"])
    assert update["NodeID"] == "edge" and links(update) == NO_LINKS
    unknown = c.get(f"/v1/allocation/{alloc['ID']}")
    assert unknown["ClientStatus"] == "unknown"
    timeout = c.get(f"/v1/evaluation/{unknown['FollowupEvalID']}")
    assert timeout["TriggeredBy"] == "max-disconnect-timeout"
    assert timeout["Status"] == "pending"
    assert timeout["StatusDescription"] == "created for delayed disconnect timeout"
    assert timeout["PreviousEval"] == update["ID"] and timeout["NextEval"] == timeout["BlockedEval"] == ""
    assert (
        timeout["WaitUntil"] - timeout["CreateTime"]
        <= 3 * SECOND
        < timeout["WaitUntil"] - update["CreateTime"]
    )

    done = wait_eval(c, timeout["ID"], timeout=30)
    assert done["ModifyTime"] >= timeout["WaitUntil"]
    assert c.get(f"/v1/allocation/{alloc['ID']}")["ClientStatus"] == "lost"
    (replacement,) = c.wait(lambda: running(c, "tolerant"))
    assert replacement["NodeID"] == "spare" and replacement["EvalID"] == timeout["ID"]


def test_reconnect(cluster: Cluster, beater: Beater, clients: FakeClients) -> None:
    """A disconnected node comes back and its client reports the unknown alloc running: a
    reconnect eval keeps it."""
    c = cluster
    node(c, beater, "edge", beats=False)
    job = plain_job("tolerant", 1, Disconnect={"LostAfter": 60 * SECOND, "Replace": False})
    wait_eval(c, c.put("/v1/jobs", job)["EvalID"])
    (alloc,) = c.wait(lambda: running(c, "tolerant"))
    c.wait(lambda: c.get(f"/v1/allocation/{alloc['ID']}")["ClientStatus"] == "unknown", timeout=15)

    beater.nodes.add("edge")
    c.wait(lambda: c.get("/v1/node/edge")["Status"] == "ready")
    back = {"NodeID": "edge", "Updates": [{"ID": alloc["ID"], "ClientStatus": "running"}]}
    c.put("/v1/drover/allocs/status", back)
    (reconnect,) = wait_trigger(c, "tolerant", "reconnect")
    reconnect = wait_eval(c, reconnect["ID"])
    assert links(reconnect) == NO_LINKS
    kept = c.get(f"/v1/allocation/{alloc['ID']}")
    assert kept["DesiredStatus"] == "run" and kept["ClientStatus"] == "running"
    assert [a["ID"] for a in running(c, "tolerant")] == [alloc["ID"]]
