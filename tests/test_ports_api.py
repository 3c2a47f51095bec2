"""Ports through the whole control plane: a static port is given once per node, the alloc that
finds none blocks with Nomad's collision reason in its metrics, dynamic ports stay inside the
range and are never given twice on a node, and the reads (and python-nomad) show each alloc's
AllocatedResources and the job's Networks as given."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import nomad
import pytest

from .cluster import Cluster
from .standin import StandInClients

NODES = ["ports-1", "ports-2"]


@pytest.fixture(scope="module")
def cluster(
    module_database_url: str,
    nats_url: str,
    module_streams_fresh: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    c = Cluster(module_database_url, nats_url, tmp_path_factory.mktemp("ports")).start()
    yield c
    c.stop()


@pytest.fixture(scope="module")
def clients(cluster: Cluster) -> Iterator[StandInClients]:
    s = StandInClients(str(cluster.http.base_url), NODES, mem=100_000)
    yield s
    s.close()


def job(job_id: str, count: int, network: dict[str, Any]) -> dict[str, Any]:
    return {
        "Job": {
            "ID": job_id,
            "Datacenters": ["dc1"],
            "Update": {"MaxParallel": 0},
            "TaskGroups": [
                {
                    "Name": "web",
                    "Count": count,
                    "Networks": [network],
                    "Tasks": [{"Name": "web", "Driver": "mock", "Resources": {"CPU": 10, "MemoryMB": 10}}],
                }
            ],
        }
    }


def running(c: Cluster, job_id: str, n: int) -> list[dict[str, Any]]:
    def ready() -> list[dict[str, Any]] | None:
        stubs = [a for a in c.get(f"/v1/job/{job_id}/allocations") if a["ClientStatus"] == "running"]
        return stubs if len(stubs) == n else None

    stubs: list[dict[str, Any]] = c.wait(
        ready, timeout=30, describe=lambda: f"{n} running allocs of {job_id}"
    )
    return [c.get(f"/v1/allocation/{a['ID']}") for a in stubs]


def test_a_static_port_once_per_node_and_the_third_alloc_blocked_with_the_collision(
    cluster: Cluster, clients: StandInClients
) -> None:
    c = cluster
    c.put("/v1/jobs", job("static", 3, {"ReservedPorts": [{"Label": "admin", "Value": 9900}]}))
    allocs = running(c, "static", 2)
    assert sorted(a["NodeID"] for a in allocs) == NODES
    for a in allocs:
        ports = a["AllocatedResources"]["Shared"]["Ports"]
        assert ports == [
            {"Label": "admin", "Value": 9900, "To": 0, "HostIP": "127.0.0.1", "IgnoreCollision": False}
        ]
        assert a["AllocatedResources"]["Shared"]["Networks"][0]["ReservedPorts"][0]["Value"] == 9900

    def failed() -> dict[str, Any] | None:
        evals = c.get("/v1/job/static/evaluations")
        if not any(e["Status"] == "blocked" for e in evals):
            return None
        return next((e for e in evals if e.get("FailedTGAllocs")), None)

    metric = c.wait(failed, timeout=15)["FailedTGAllocs"]["web"]
    assert metric["DimensionExhausted"] == {"network: reserved port collision admin=9900": 2}
    # python-nomad reads the job's network and the alloc's ports back.
    client = nomad.Nomad(host="127.0.0.1", port=c.port, timeout=30)
    networks = client.job.get_job("static")["TaskGroups"][0]["Networks"]
    assert networks[0]["ReservedPorts"][0]["Label"] == "admin"
    got = client.allocation.get_allocation(allocs[0]["ID"])["AllocatedResources"]["Shared"]["Ports"]
    assert got[0]["Value"] == 9900


def test_dynamic_ports_never_twice_on_a_node_and_inside_the_range(
    cluster: Cluster, clients: StandInClients
) -> None:
    c = cluster
    c.put("/v1/jobs", job("dynamic", 200, {"DynamicPorts": [{"Label": "http"}, {"Label": "grpc", "To": -1}]}))
    allocs = running(c, "dynamic", 200)
    held: Counter[tuple[str, int]] = Counter()
    for a in allocs:
        ports = a["AllocatedResources"]["Shared"]["Ports"]
        assert [p["Label"] for p in ports] == ["http", "grpc"]
        assert ports[1]["To"] == ports[1]["Value"]  # to = -1 maps to the host port
        for p in ports:
            assert 20000 <= p["Value"] <= 32000
            held[(a["NodeID"], p["Value"])] += 1
    assert len(held) == 400 and max(held.values()) == 1
    assert {node for node, _ in held} == set(NODES)
