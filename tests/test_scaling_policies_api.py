"""Scaling policies through the API of a running cluster, as the Nomad Autoscaler reads them:
`/v1/scaling/policies` (by job, by type prefix) and `/v1/scaling/policy/:id` with python-nomad,
IDs kept across registrations, a scale outside the group's bounds refused in Nomad's words
with nothing written, and the scale status and metrics the autoscaler's nomad target and APM
read."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import nomad  # type: ignore[import-untyped]
import pytest

from drover.runtime.bus import connect
from drover.runtime.embedded import EmbeddedNats, EmbeddedPostgres

from .cluster import Cluster, nats_credentials
from .conftest import fresh_database, reset_jetstream


def scaled_job(job_id: str, count: int = 2, **scaling: Any) -> dict[str, Any]:
    policy = {"cooldown": "1m", "check": [{"cpu": [{"source": "nomad-apm", "query": "avg_cpu"}]}]}
    task = {
        "Name": "t",
        "Driver": "mock",
        "Config": {"run_for": "1h"},
        "Resources": {"CPU": 10, "MemoryMB": 16},
    }
    group = {
        "Name": "g",
        "Count": count,
        "Tasks": [task],
        "Update": {"MaxParallel": 0},
        "Scaling": {"Min": 1, "Max": 5, "Enabled": True, "Policy": policy, **scaling},
    }
    return {"Job": {"ID": job_id, "Datacenters": ["dc1"], "TaskGroups": [group]}}


async def _reset(nats_url: str) -> None:
    nc = await connect(nats_url, "test", nats_credentials())
    await reset_jetstream(nc)
    await nc.close()


@pytest.fixture(scope="module")
def cluster(
    postgres: EmbeddedPostgres | str,
    nats_server: EmbeddedNats | str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    nats_url = nats_server if isinstance(nats_server, str) else nats_server.url
    asyncio.run(_reset(nats_url))
    with fresh_database(postgres) as url:
        c = Cluster(url, nats_url, tmp_path_factory.mktemp("scaling"), workers=1, leaders=0, gcs=0).start()
        try:
            yield c
        finally:
            c.stop()


def test_the_autoscaler_lists_and_reads_the_policies(cluster: Cluster) -> None:
    c = cluster
    c.put("/v1/jobs", scaled_job("web"))
    c.put("/v1/jobs", scaled_job("api"))
    client = nomad.Nomad(address=f"http://127.0.0.1:{c.port}", timeout=30)
    listed = client.scaling.get_scaling_policies()
    assert {p["Target"]["Job"] for p in listed} == {"web", "api"}
    (web,) = client.scaling.get_scaling_policies(job="web")
    assert web["Type"] == "horizontal" and web["Enabled"] is True
    assert web["Target"] == {"Namespace": "default", "Job": "web", "Group": "g"}
    assert web["CreateIndex"] > 0 and web["ModifyIndex"] >= web["CreateIndex"]
    policy = client.scaling.get_scaling_policy(web["ID"])
    assert (policy["Min"], policy["Max"], policy["Policy"]["cooldown"]) == (1, 5, "1m")
    assert policy["Target"] == web["Target"] and policy["Namespace"] == "default"
    assert client.scaling.get_scaling_policies(type_="vertical_cpu") == []
    assert [p["ID"] for p in c.get("/v1/scaling/policies", type="horiz", job="web")] == [web["ID"]]
    assert c.http.get("/v1/scaling/policy/no-such-policy").status_code == 404

    # Registered again, changed or not, the policy keeps its ID and CreateIndex.
    c.put("/v1/jobs", scaled_job("web", count=3, Max=6))
    (again,) = c.get("/v1/scaling/policies", job="web")
    assert (again["ID"], again["CreateIndex"]) == (web["ID"], web["CreateIndex"])
    assert again["ModifyIndex"] > web["ModifyIndex"]
    assert c.get(f"/v1/scaling/policy/{web['ID']}")["Max"] == 6


def test_a_scale_outside_the_bounds_is_refused_in_nomads_words(cluster: Cluster) -> None:
    c = cluster
    c.put("/v1/jobs", scaled_job("bounded"))
    before = c.get("/v1/job/bounded")
    for count, words in (
        (0, "group count was less than scaling policy minimum: 0 < 1"),
        (9, "group count was greater than scaling policy maximum: 9 > 5"),
    ):
        r = c.http.post("/v1/job/bounded/scale", json={"Count": count, "Target": {"Group": "g"}})
        assert r.status_code == 400 and words in r.text, r.text
    assert c.get("/v1/job/bounded")["JobModifyIndex"] == before["JobModifyIndex"]
    r = c.http.post("/v1/job/bounded/scale", json={"Count": 4, "Target": {"Group": "g"}})
    assert r.status_code == 200, r.text
    # What the autoscaler's nomad target reads back, and the APM's metrics in Nomad's JSON.
    status = c.get("/v1/job/bounded/scale")
    assert status["TaskGroups"]["g"]["Desired"] == 4
    metrics = httpx.get(f"http://127.0.0.1:{c.port}/v1/metrics", params={"format": "json"}, timeout=30).json()
    assert {"Gauges", "Counters", "Samples"} <= set(metrics)
