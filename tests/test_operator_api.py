"""The cluster's own endpoints in-process against real PostgreSQL (and NATS where named): the
agent's self, members and health, the regions and raft peers, the scheduler configuration with
its check-and-set and the registrations it refuses, and node pools - each refusal in Nomad's
words, leaving the log where it was."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.model.events import NodePoolUpserted, SchedulerConfigUpdated
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore

from .cluster import job_json, node_json

REJECTED = "Job registration, dispatch, and scale are disabled by the scheduler configuration"


def _client(settings: Settings) -> TestClient:
    return TestClient(create_app(settings, EventStore(settings.database_url)))


@pytest.fixture
def client(database_url: str, nats_url: str) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url=nats_url, region="eu-west", datacenter="dc7")
    with _client(settings) as c:
        yield c


def _ok(r: Any) -> Any:
    assert r.status_code == 200, (r.status_code, r.text)
    return r.json() if r.content else None


def _node(node_id: str, pool: str = "") -> dict[str, Any]:
    body = node_json(node_id)
    if pool:
        body["NodePool"] = pool
    return {"Node": body}


def _job(job_id: str, *, pool: str = "", memory_max: int = 0, **job: Any) -> dict[str, Any]:
    body = job_json(job_id, 1, rolling=False)
    if pool:
        body["Job"]["NodePool"] = pool
    if memory_max:
        body["Job"]["TaskGroups"][0]["Tasks"][0]["Resources"]["MemoryMaxMB"] = memory_max
    body["Job"].update(job)
    return body


# --- agent, regions, status ---
def test_agent_self_answers_as_a_nomad_server(client: TestClient) -> None:
    r = client.get("/v1/agent/self")
    body = _ok(r)
    config, member, stats = body["config"], body["member"], body["stats"]
    assert config["Region"] == "eu-west" and config["Datacenter"] == "dc7"
    assert config["NodeName"] == socket.gethostname()
    assert config["Version"]["Version"] and config["Version"]["VersionMetadata"] == "drover"
    assert config["Server"]["Enabled"] is True and config["Client"]["Enabled"] is False
    assert member["Name"] == f"{socket.gethostname()}.eu-west" and member["Status"] == "alive"
    assert (
        member["Tags"]["region"] == "eu-west"
        and member["Tags"]["dc"] == "dc7"
        and member["Tags"]["role"] == "nomad"
    )
    assert member["Tags"]["build"] == config["Version"]["Version"]
    assert stats["nomad"]["server"] == "true" and stats["raft"]["state"] == "Leader"
    assert all(isinstance(v, str) for group in stats.values() for v in group.values())
    # Nothing that could hold a secret: no database or NATS address.
    assert "postgresql" not in r.text and "nats://" not in r.text


def test_members_and_peers_are_the_api_servers(database_url: str, nats_url: str) -> None:
    """Two API servers see each other through NATS; one stopped leaves (Nomad's `left`)."""
    one = Settings(database_url=database_url, nats_url=nats_url, api_port=14646, node_name="api-1")
    two = Settings(database_url=database_url, nats_url=nats_url, api_port=24646, node_name="api-2")
    with _client(one) as c1:
        with _client(two) as c2:

            def names(c: TestClient, status: str = "alive") -> list[str]:
                """This test's servers of that status (an earlier test's left, in the same NATS)."""
                members = _ok(c.get("/v1/agent/members"))["Members"]
                return sorted(
                    m["Name"] for m in members if m["Status"] == status and m["Name"].startswith("api-")
                )

            _wait(lambda: names(c1) == ["api-1.global", "api-2.global"])
            assert names(c2) == ["api-1.global", "api-2.global"]
            body = _ok(c2.get("/v1/agent/members"))
            assert body["ServerName"] == "api-2.global" and body["ServerRegion"] == "global"
            assert {"127.0.0.1:14646", "127.0.0.1:24646"} <= set(_ok(c1.get("/v1/status/peers")))
            raft = _ok(c1.get("/v1/operator/raft/configuration"))
            assert {"api-1.global", "api-2.global"} <= {s["Node"] for s in raft["Servers"]}
            assert [s["Node"] for s in raft["Servers"] if s["Leader"]] == ["api-1.global"]
            joined = _ok(c1.post("/v1/agent/join", params={"address": ["127.0.0.1:24646", "10.9.9.9"]}))
            assert joined["num_joined"] == 1 and "10.9.9.9" in joined["error"]
        _wait(lambda: names(c1, "left") == ["api-2.global"])
        peers = _ok(c1.get("/v1/status/peers"))
        assert "127.0.0.1:14646" in peers and "127.0.0.1:24646" not in peers
        # A server that left is forgotten by a prune.
        assert client_force_leave(c1, "api-2.global") == 200
        _wait(lambda: names(c1, "left") == [])


def client_force_leave(c: TestClient, name: str) -> int:
    return c.post("/v1/agent/force-leave", params={"node": name, "prune": "true"}).status_code


def _wait(fn: Any, timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not fn():
        assert time.monotonic() < deadline, "condition not met"
        time.sleep(0.1)


def test_regions_and_health(client: TestClient) -> None:
    assert _ok(client.get("/v1/regions")) == ["eu-west"]
    assert _ok(client.get("/v1/agent/health")) == {"server": {"ok": True, "message": "ok"}}
    # This agent runs no client: asked for one, it is unhealthy, as a Nomad server answers.
    r = client.get("/v1/agent/health", params={"type": "client"})
    assert r.status_code == 500 and json.loads(r.text) == {
        "client": {"ok": False, "message": "client not enabled"}
    }
    assert client.get("/v1/agent/servers").status_code == 501


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_health_names_the_backing_server_that_is_down(database_url: str, nats_url: str) -> None:
    no_nats = Settings(database_url=database_url, nats_url=f"nats://127.0.0.1:{_closed_port()}")
    with _client(no_nats) as c:
        r = c.get("/v1/agent/health")
        assert r.status_code == 500
        server = json.loads(r.text)["server"]
        assert server["ok"] is False and server["message"].startswith("NATS unreachable")
    user_and_password = database_url.split("//", 1)[1].split("@", 1)[0]
    no_postgres = database_url.replace(
        database_url.split("@", 1)[1].split("/", 1)[0], f"127.0.0.1:{_closed_port()}"
    )
    with _client(Settings(database_url=no_postgres, nats_url=nats_url)) as c:
        r = c.get("/v1/agent/health")
        assert r.status_code == 500
        message = json.loads(r.text)["server"]["message"]
        assert message.startswith("PostgreSQL unreachable") and "NATS" not in message
        if ":" in user_and_password:
            assert user_and_password.split(":", 1)[1] not in r.text


# --- the scheduler configuration ---
def test_the_scheduler_configuration_is_nomad_s_default_until_set(
    client: TestClient, store: EventStore
) -> None:
    body = _ok(client.get("/v1/operator/scheduler/configuration"))
    assert body["Index"] == 0 and body["KnownLeader"] is True
    assert body["SchedulerConfig"] == {
        "SchedulerAlgorithm": "binpack",
        "PreemptionConfig": {
            "SystemSchedulerEnabled": True, "SysBatchSchedulerEnabled": False,
            "BatchSchedulerEnabled": False, "ServiceSchedulerEnabled": False,
        },
        "MemoryOversubscriptionEnabled": False, "RejectJobRegistration": False, "PauseEvalBroker": False,
        "NodeLimitForFeasibilityChecks": 0, "NodeScoring": "", "CreateIndex": 0, "ModifyIndex": 0,
    }  # fmt: skip

    r = client.put(
        "/v1/operator/scheduler/configuration",
        json={
            "SchedulerAlgorithm": "spread",
            "PreemptionConfig": {"ServiceSchedulerEnabled": True},
            "NodeScoring": "all",
        },
    )
    set_at = _ok(r)
    assert set_at == {"Updated": True, "Index": store.last_position()}
    assert r.headers["X-Nomad-Index"] == str(set_at["Index"])
    config = _ok(client.get("/v1/operator/scheduler/configuration"))["SchedulerConfig"]
    assert config["SchedulerAlgorithm"] == "spread" and config["PreemptionConfig"]["ServiceSchedulerEnabled"]
    assert config["NodeScoring"] == "all"
    # Set whole: what the request left out is off (Nomad's decoder), the system scheduler's too.
    assert config["PreemptionConfig"]["SystemSchedulerEnabled"] is False
    assert config["CreateIndex"] == config["ModifyIndex"] == set_at["Index"]
    (event,) = [
        e.event for e in store.read(set_at["Index"] - 1) if isinstance(e.event, SchedulerConfigUpdated)
    ]
    assert event.config.scheduler_algorithm == "spread"


def test_check_and_set_on_the_modify_index(client: TestClient, store: EventStore) -> None:
    first = _ok(client.put("/v1/operator/scheduler/configuration", json={"SchedulerAlgorithm": "spread"}))
    before = store.last_position()
    # 0: "never set" - stale once it was.
    stale = client.put("/v1/operator/scheduler/configuration?cas=0", json={"SchedulerAlgorithm": "binpack"})
    assert _ok(stale) == {"Updated": False, "Index": before}
    assert store.last_position() == before
    r = client.post(
        f"/v1/operator/scheduler/configuration?cas={first['Index']}", json={"PauseEvalBroker": True}
    )
    second = _ok(r)
    assert second["Updated"] is True and second["Index"] > first["Index"]
    config = _ok(client.get("/v1/operator/scheduler/configuration"))["SchedulerConfig"]
    assert config["PauseEvalBroker"] is True and config["SchedulerAlgorithm"] == "binpack"
    assert config["CreateIndex"] == first["Index"] and config["ModifyIndex"] == second["Index"]


def test_a_bad_configuration_lists_every_problem_and_writes_nothing(
    client: TestClient, store: EventStore
) -> None:
    before = store.last_position()
    r = client.put(
        "/v1/operator/scheduler/configuration",
        json={
            "SchedulerAlgorithm": "roundrobin",
            "PreemptionConfig": {"BatchSchedulerEnabled": "yes"},
            "NodeLimitForFeasibilityChecks": -1,
            "NodeScoring": "some",
            "PauseEvalBroker": 1,
        },
    )
    assert r.status_code == 400
    lines = r.text.splitlines()
    assert any("invalid scheduler algorithm: roundrobin" in line for line in lines)
    assert any("PreemptionConfig.BatchSchedulerEnabled must be a boolean" in line for line in lines)
    assert any(line.startswith("NodeLimitForFeasibilityChecks") for line in lines)
    assert any("invalid node scoring: some" in line for line in lines)
    assert any(line.startswith("PauseEvalBroker must be a boolean") for line in lines)
    assert client.put("/v1/operator/scheduler/configuration?cas=x", json={}).status_code == 400
    assert store.last_position() == before


def test_reject_job_registration_refuses_register_dispatch_revert_and_scale(
    client: TestClient, store: EventStore
) -> None:
    _ok(client.put("/v1/jobs", json=_job("web")))
    _ok(client.put("/v1/jobs", json=_job("web", Meta={"v": "2"})))
    params = _job("batchy", Type="batch", ParameterizedJob={"Payload": "optional"})
    del params["Job"]["Update"]  # a batch job has none
    _ok(client.put("/v1/jobs", json=params))
    _ok(client.put("/v1/operator/scheduler/configuration", json={"RejectJobRegistration": True}))
    before = store.last_position()
    refused = [
        client.put("/v1/jobs", json=_job("other")),
        client.put("/v1/job/web", json=_job("web", Meta={"v": "3"})),
        client.post("/v1/job/batchy/dispatch", json={}),
        client.post("/v1/job/web/revert", json={"JobID": "web", "JobVersion": 0}),
        client.post("/v1/job/web/scale", json={"Count": 2, "Target": {"Group": "web"}}),
    ]
    assert [(r.status_code, r.text) for r in refused] == [(403, REJECTED)] * len(refused)
    assert store.last_position() == before
    # Reads and plans go on; and registrations once it is lifted.
    assert _ok(client.put("/v1/job/other/plan", json=_job("other")))["JobModifyIndex"] == 0
    _ok(client.put("/v1/operator/scheduler/configuration", json={"RejectJobRegistration": False}))
    _ok(client.put("/v1/jobs", json=_job("other")))


def test_memory_max_is_warned_of_without_oversubscription(client: TestClient) -> None:
    warnings = _ok(client.put("/v1/jobs", json=_job("mem", memory_max=1024)))["Warnings"]
    assert (
        'Memory oversubscription is not enabled; Task "web.web" memory_max value will be ignored' in warnings
    )
    planned = _ok(client.put("/v1/job/mem/plan", json=_job("mem", memory_max=1024)))["Warnings"]
    assert "Memory oversubscription is not enabled" in planned
    _ok(client.put("/v1/operator/scheduler/configuration", json={"MemoryOversubscriptionEnabled": True}))
    assert (
        "oversubscription" not in _ok(client.put("/v1/jobs", json=_job("mem", memory_max=2048)))["Warnings"]
    )


# --- node pools ---
def test_the_built_in_pools_are_listed_and_cannot_be_changed(client: TestClient, store: EventStore) -> None:
    pools = _ok(client.get("/v1/node/pools"))
    assert [(p["Name"], p["Description"], p["CreateIndex"]) for p in pools] == [
        ("all", "Node pool with all nodes in the cluster.", 1),
        ("default", "Default node pool.", 1),
    ]
    assert _ok(client.get("/v1/node/pool/default"))["Name"] == "default"
    before = store.last_position()
    for name in ("all", "default"):
        r = client.put(f"/v1/node/pool/{name}", json={"Name": name, "Description": "mine"})
        assert (r.status_code, r.text) == (400, f'modifying node pool "{name}" is not allowed')
        r = client.delete(f"/v1/node/pool/{name}")
        assert (r.status_code, r.text) == (400, f'deleting node pool "{name}" is not allowed')
    assert store.last_position() == before


def test_pools_are_written_read_and_deleted(client: TestClient, store: EventStore) -> None:
    spec = {
        "Name": "gpu",
        "Description": "GPU nodes",
        "Meta": {"team": "ml"},
        "SchedulerConfiguration": {"SchedulerAlgorithm": "spread"},
        "NodeIdentityTTL": "12h",
    }
    r = client.put("/v1/node/pool/gpu", json=spec)
    assert r.status_code == 200 and r.headers["X-Nomad-Index"] == str(store.last_position())
    pool = _ok(client.get("/v1/node/pool/gpu"))
    assert pool["Meta"] == {"team": "ml"} and pool["SchedulerConfiguration"]["SchedulerAlgorithm"] == "spread"
    assert pool["NodeIdentityTTL"] == 12 * 3600 * 10**9 and pool["CreateIndex"] == pool["ModifyIndex"]
    created = pool["CreateIndex"]
    _ok(client.post("/v1/node/pools", json={**spec, "Description": "GPUs"}))
    again = _ok(client.get("/v1/node/pool/gpu"))
    assert again["Description"] == "GPUs" and again["CreateIndex"] == created < again["ModifyIndex"]
    _ok(client.put("/v1/node/pool/gpu-2", json={"Name": "gpu-2"}))
    assert [p["Name"] for p in _ok(client.get("/v1/node/pools", params={"prefix": "gpu"}))] == [
        "gpu",
        "gpu-2",
    ]
    page = client.get("/v1/node/pools", params={"per_page": 2})
    assert [p["Name"] for p in page.json()] == ["all", "default"] and page.headers[
        "X-Nomad-NextToken"
    ] == "gpu"
    assert isinstance(store.read(created - 1)[0].event, NodePoolUpserted)
    _ok(client.delete("/v1/node/pool/gpu-2"))
    assert client.get("/v1/node/pool/gpu-2").status_code == 404
    assert client.delete("/v1/node/pool/gpu-2").text == "node pool gpu-2 not found"


@pytest.mark.parametrize(
    ("path", "body", "needle"),
    [
        ("/v1/node/pool/x", {"Name": "y"}, "Node pool name does not match request path"),
        ("/v1/node/pools", {"Name": "bad name!"}, 'invalid node pool "bad name!":\ninvalid name "bad name!"'),
        ("/v1/node/pools", {"Name": "x", "Description": "d" * 257}, "description longer than 256"),
        ("/v1/node/pools", {"Name": "x", "SchedulerConfiguration": {"SchedulerAlgorithm": "rr"}}, "invalid scheduler algorithm: rr"),
        ("/v1/node/pools", {"Name": "x", "Meta": {"a": 1}}, "Meta.a must be a string"),
    ],
)  # fmt: skip
def test_a_bad_pool_is_refused(
    client: TestClient, store: EventStore, path: str, body: Any, needle: str
) -> None:
    before = store.last_position()
    r = client.put(path, json=body)
    assert r.status_code == 400 and needle in r.text, r.text
    assert store.last_position() == before


def test_a_pool_s_nodes_and_jobs(client: TestClient, store: EventStore) -> None:
    _ok(client.put("/v1/node/pool/gpu", json={"Name": "gpu"}))
    _ok(client.put("/v1/drover/node/register", json=_node("g1", "gpu")))
    _ok(client.put("/v1/drover/node/register", json=_node("g2", "gpu")))
    _ok(client.put("/v1/drover/node/register", json=_node("d1")))
    _ok(client.put("/v1/jobs", json=_job("train", pool="gpu")))
    _ok(client.put("/v1/jobs", json=_job("web")))
    assert [n["ID"] for n in _ok(client.get("/v1/node/pool/gpu/nodes"))] == ["g1", "g2"]
    assert [n["ID"] for n in _ok(client.get("/v1/node/pool/all/nodes"))] == ["d1", "g1", "g2"]
    assert [n["ID"] for n in _ok(client.get("/v1/node/pool/default/nodes"))] == ["d1"]
    page = client.get("/v1/node/pool/gpu/nodes", params={"per_page": 1})
    assert [n["ID"] for n in page.json()] == ["g1"] and page.headers["X-Nomad-NextToken"] == "g2"
    jobs = _ok(client.get("/v1/node/pool/gpu/jobs"))
    assert [(j["ID"], j["NodePool"]) for j in jobs] == [("train", "gpu")] and "JobSummary" in jobs[0]
    assert [j["ID"] for j in _ok(client.get("/v1/node/pool/gpu/jobs", params={"namespace": "*"}))] == [
        "train"
    ]
    assert client.get("/v1/node/pool/gpu/jobs", params={"prefix": "t"}).text == "prefix argument not allowed"
    assert client.get("/v1/node/pool/nope/nodes").status_code == 404
    # In use: neither the nodes nor a job that has not ended let it go.
    before = store.last_position()
    r = client.delete("/v1/node/pool/gpu")
    assert r.status_code == 409
    assert (
        r.text
        == 'node pool "gpu" has non-terminal jobs in regions: [eu-west]\nnode pool "gpu" has nodes in regions: [eu-west]'
    )
    assert store.last_position() == before
    _ok(client.delete("/v1/job/train?purge=true"))
    for node in ("g1", "g2"):
        _ok(client.post(f"/v1/node/{node}/purge"))
    _ok(client.delete("/v1/node/pool/gpu"))
    assert client.get("/v1/node/pool/gpu").status_code == 404


def test_a_job_in_an_unknown_pool_is_refused(client: TestClient, store: EventStore) -> None:
    before = store.last_position()
    r = client.put("/v1/jobs", json=_job("lost", pool="nope"))
    assert (r.status_code, r.text) == (400, 'job "lost" is in nonexistent node pool "nope"')
    r = client.put("/v1/job/lost/plan", json=_job("lost", pool="nope"))
    assert r.status_code == 400 and "nonexistent node pool" in r.text
    assert store.last_position() == before
    _ok(client.put("/v1/jobs", json=_job("everywhere", pool="all")))


def test_a_node_registering_into_an_unknown_pool_creates_it(client: TestClient, store: EventStore) -> None:
    assert client.get("/v1/node/pool/edge").status_code == 404
    _ok(client.put("/v1/drover/node/register", json=_node("e1", "edge")))
    pool = _ok(client.get("/v1/node/pool/edge"))
    assert pool["Name"] == "edge" and pool["CreateIndex"] == store.last_position()
    # A second node finds it there: nothing created again.
    _ok(client.put("/v1/drover/node/register", json=_node("e2", "edge")))
    assert _ok(client.get("/v1/node/pool/edge"))["ModifyIndex"] == pool["ModifyIndex"]
    _ok(client.put("/v1/jobs", json=_job("edgy", pool="edge")))
    for pool_name, needle in (
        ("all", 'node is not allowed to register in node pool "all"'),
        ("a b", "invalid node pool"),
    ):
        r = client.put("/v1/drover/node/register", json=_node("x1", pool_name))
        assert r.status_code == 400 and needle in r.text, r.text


def test_the_projections_rebuild_equal(client: TestClient, store: EventStore) -> None:
    _ok(client.put("/v1/operator/scheduler/configuration", json={"SchedulerAlgorithm": "spread"}))
    _ok(client.put("/v1/node/pool/gpu", json={"Name": "gpu", "Meta": {"a": "b"}}))
    _ok(client.put("/v1/drover/node/register", json=_node("e1", "edge")))
    _ok(client.put("/v1/node/pool/old", json={"Name": "old"}))
    _ok(client.delete("/v1/node/pool/old"))
    live = store.projection_dump()
    assert len(live["node_pools"]) == 2 and len(live["scheduler_config"]) == 1
    store.rebuild_projections()
    assert store.projection_dump() == live
