"""Nomad's search through the HTTP API in-process, against a real PostgreSQL: IDs by prefix per
context (20 at most, Truncations past that, X-Nomad-Index), fuzzy matches of the names inside
jobs (groups, tasks, services, images), nodes and allocs with their Scope, the shortest text
and an unknown context refused with 400s, and, with ACLs on, only what the token may read."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.api.search import CONTEXTS
from drover.model.events import EvalsUpserted
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore
from drover.scheduler import evaluate_plan, schedule
from drover.scheduler.planapply import plan_applied_event

from .cluster import node_json

NOW = 1_700_000_000_000_000_000


def rich_job(job_id: str, namespace: str = "default", name: str = "") -> dict[str, Any]:
    """A job with a group, a docker task and an exec task, and services at both levels."""
    docker = {"Name": "redis", "Driver": "docker", "Config": {"image": "redis:7"},
              "Resources": {"CPU": 100, "MemoryMB": 64},
              "Services": [{"Name": "redis-metrics", "Provider": "nomad"}]}  # fmt: skip
    exec_ = {"Name": "sidecar", "Driver": "exec", "Config": {"command": "/bin/pinger"},
             "Resources": {"CPU": 100, "MemoryMB": 64}}  # fmt: skip
    group = {"Name": "cache", "Count": 1, "Tasks": [docker, exec_],
             "Services": [{"Name": "cache-svc", "Provider": "nomad"}]}  # fmt: skip
    job = {"ID": job_id, "Namespace": namespace, "Datacenters": ["dc1"], "TaskGroups": [group]}
    return {"Job": {**job, **({"Name": name} if name else {})}}


def mock_job(job_id: str, namespace: str = "default") -> dict[str, Any]:
    group = {
        "Name": "g",
        "Count": 1,
        "Tasks": [{"Name": "t", "Driver": "mock", "Resources": {"CPU": 10, "MemoryMB": 16}}],
    }
    return {"Job": {"ID": job_id, "Namespace": namespace, "Datacenters": ["dc1"], "TaskGroups": [group]}}


def place(store: EventStore, eval_id: str) -> None:
    """What a worker and the plan applier would do for `eval_id` (no services run here)."""
    state = store.replay()
    evaluation = state.eval(eval_id)
    assert evaluation is not None
    res = schedule(state, evaluation, NOW)
    store.append([plan_applied_event(evaluate_plan(state, res.plan), NOW), EvalsUpserted(evals=[res.eval])])


def app(database_url: str, tmp_path: Path, acl: bool) -> TestClient:
    settings = Settings(database_url=database_url, nats_url="nats://unused", data_dir=str(tmp_path),
                        keyring=str(tmp_path / "keyring.json"), acl_enabled=acl,
                        acl_token_min_expiration_ttl=0.0)  # fmt: skip
    return TestClient(create_app(settings, EventStore(database_url)))


@pytest.fixture
def client(database_url: str, tmp_path: Path) -> Iterator[TestClient]:
    with app(database_url, tmp_path, acl=False) as c:
        yield c


def search(
    client: TestClient, path: str = "/v1/search", headers: dict[str, str] | None = None, **body: Any
) -> Any:
    r = client.post(path, json=body, headers=headers or {})
    assert r.status_code == 200, r.text
    assert int(r.headers["X-Nomad-Index"]) == r.json()["Index"] > 0
    return r.json()


def register(client: TestClient, body: dict[str, Any], headers: dict[str, str] | None = None) -> str:
    r = client.put("/v1/jobs", json=body, headers=headers or {})
    assert r.status_code == 200, r.text
    return str(r.json()["EvalID"])


def test_prefix_search_finds_ids_in_each_context(client: TestClient, store: EventStore) -> None:
    assert client.put("/v1/namespace/prod", json={"Name": "prod"}).status_code == 200
    assert client.put("/v1/drover/node/register", json={"Node": node_json("node-a1")}).status_code == 200
    evals = [register(client, mock_job(j)) for j in ("web-a", "web-b", "api")]
    register(client, mock_job("web-x", "prod"))
    for e in evals:
        place(store, e)
    allocs = client.get("/v1/allocations").json()

    found = search(client, Prefix="web", Context="jobs")
    assert found["Matches"] == {"jobs": ["web-a", "web-b"]} and found["Truncations"] == {"jobs": False}
    # The namespace: the body's, then ?namespace= over it, as Nomad's agent reads it.
    assert search(client, Prefix="web", Context="jobs", Namespace="prod")["Matches"]["jobs"] == ["web-x"]
    r = client.post(
        "/v1/search?namespace=prod", json={"Prefix": "w", "Context": "jobs", "Namespace": "default"}
    )
    assert r.json()["Matches"]["jobs"] == ["web-x"]
    assert search(client, Prefix="web", Context="jobs", Namespace="*")["Matches"]["jobs"] == [
        "web-a",
        "web-b",
        "web-x",
    ]

    every = search(client, Prefix=evals[0][:6], Context="all")
    assert set(every["Matches"]) == set(CONTEXTS) == set(every["Truncations"])
    assert every["Matches"]["evals"] == [evals[0]] and every["Matches"]["jobs"] is None
    assert every["Matches"]["plugins"] is None and every["Matches"]["volumes"] is None
    alloc = allocs[0]["ID"]
    assert search(client, Prefix=alloc[:8], Context="allocs")["Matches"]["allocs"] == [alloc]
    assert search(client, Prefix="node-", Context="nodes")["Matches"]["nodes"] == ["node-a1"]
    assert search(client, Prefix="pro", Context="namespaces")["Matches"]["namespaces"] == ["prod"]
    assert search(client, Prefix="", Context="node_pools")["Matches"]["node_pools"] == ["all", "default"]
    assert search(client, Prefix="nothing", Context="all")["Matches"] == dict.fromkeys(CONTEXTS)


def test_prefix_search_answers_20_per_context_and_says_there_were_more(client: TestClient) -> None:
    for n in range(23):
        register(client, mock_job(f"batch-{n:02d}"))
    found = search(client, Prefix="batch-", Context="jobs")
    assert found["Matches"]["jobs"] == [f"batch-{n:02d}" for n in range(20)]
    assert found["Truncations"]["jobs"] is True
    found = search(client, Prefix="batch-1", Context="jobs")
    assert len(found["Matches"]["jobs"]) == 10 and found["Truncations"]["jobs"] is False


def test_fuzzy_search_finds_names_inside_jobs_nodes_and_allocs(client: TestClient, store: EventStore) -> None:
    node = node_json("cachebox-1")
    node["Drivers"].update({d: {"Detected": True, "Healthy": True} for d in ("docker", "exec")})
    assert client.put("/v1/drover/node/register", json={"Node": node}).status_code == 200
    place(store, register(client, rich_job("frontend")))
    register(client, rich_job("backend-cache", name="backend-cache"))

    found = search(client, "/v1/search/fuzzy", Text="CACHE", Context="all")
    m = found["Matches"]
    # Best first: where the text starts in the name, then the shorter name.
    assert m["groups"] == [{"ID": "cache", "Scope": ["default", "backend-cache"]},
                           {"ID": "cache", "Scope": ["default", "frontend"]}]  # fmt: skip
    assert m["services"] == [{"ID": "cache-svc", "Scope": ["default", "backend-cache", "cache"]},
                             {"ID": "cache-svc", "Scope": ["default", "frontend", "cache"]}]  # fmt: skip
    assert m["jobs"] == [{"ID": "backend-cache", "Scope": ["default", "backend-cache"]}]
    assert m["nodes"] == [{"ID": "cachebox-1", "Scope": ["cachebox-1"]}]
    (alloc,) = client.get("/v1/allocations").json()
    assert m["allocs"] == [{"ID": "frontend.cache[0]", "Scope": ["default", alloc["ID"]]}]
    assert found["Truncations"]["jobs"] is False

    m = search(client, "/v1/search/fuzzy", Text="redis", Context="jobs")["Matches"]
    assert m["tasks"][0] == {"ID": "redis", "Scope": ["default", "backend-cache", "cache"]}
    assert m["images"][0] == {"ID": "redis:7", "Scope": ["default", "backend-cache", "cache", "redis"]}
    assert m["services"][0]["Scope"] == ["default", "backend-cache", "cache", "redis"]
    m = search(client, "/v1/search/fuzzy", Text="pinger", Context="jobs")["Matches"]
    assert [c["ID"] for c in m["commands"]] == ["/bin/pinger", "/bin/pinger"]
    assert "jobs" not in m and set(m) == {"commands"}
    # Evals match by ID prefix, without a Scope.
    (evaluation,) = client.get("/v1/job/frontend/evaluations").json()
    m = search(client, "/v1/search/fuzzy", Text=evaluation["ID"][:6], Context="all")["Matches"]
    assert m["evals"] == [{"ID": evaluation["ID"]}]


def test_fuzzy_search_looks_through_the_first_20_objects_of_a_context(client: TestClient) -> None:
    for n in range(22):
        register(client, mock_job(f"svc-{n:02d}"))
    found = search(client, "/v1/search/fuzzy", Text="svc", Context="jobs")
    assert [m["ID"] for m in found["Matches"]["jobs"]] == [f"svc-{n:02d}" for n in range(20)]
    assert found["Truncations"]["jobs"] is True


@pytest.mark.parametrize(
    ("path", "body", "problem"),
    [
        (
            "/v1/search/fuzzy",
            {"Text": "a", "Context": "all"},
            "fuzzy search query must be at least 2 characters, got 1",
        ),
        ("/v1/search/fuzzy", {"Text": "", "Context": "jobs"}, "at least 2 characters, got 0"),
        ("/v1/search", {"Prefix": "a", "Context": "widgets"}, "context must be one of [allocs jobs"),
        ("/v1/search", {"Prefix": "a", "Context": ""}, "or 'all' for all contexts; got ''"),
        ("/v1/search/fuzzy", {"Text": "abc", "Context": "gadgets"}, "got 'gadgets'"),
        ("/v1/search", {"Prefix": 3, "Context": "jobs"}, "Prefix"),
    ],
)
def test_bad_searches_are_400s(client: TestClient, path: str, body: dict[str, Any], problem: str) -> None:
    r = client.post(path, json=body)
    assert r.status_code == 400 and problem in r.text, r.text


def test_with_acls_a_token_finds_only_what_it_may_read(
    database_url: str, tmp_path: Path, store: EventStore
) -> None:
    with app(database_url, tmp_path, acl=True) as client:
        root = {"X-Nomad-Token": client.post("/v1/acl/bootstrap").json()["SecretID"]}
        assert client.put("/v1/namespace/prod", json={"Name": "prod"}, headers=root).status_code == 200
        r = client.put("/v1/drover/node/register", json={"Node": node_json("node-1")}, headers=root)
        assert r.status_code == 200, r.text
        register(client, mock_job("web-default"), root)
        register(client, mock_job("web-prod", "prod"), root)
        rules = 'namespace "prod" { policy = "read" }'
        assert (
            client.put("/v1/acl/policy/prod", json={"Name": "prod", "Rules": rules}, headers=root).status_code
            == 200
        )
        r = client.post(
            "/v1/acl/token", json={"Name": "p", "Type": "client", "Policies": ["prod"]}, headers=root
        )
        prod = {"X-Nomad-Token": r.json()["SecretID"]}

        # A context named alone where the token may not read it: 403, as Nomad's.
        r = client.post("/v1/search", json={"Prefix": "web", "Context": "jobs"}, headers=prod)
        assert (r.status_code, r.text) == (403, "Permission denied")
        r = client.post(
            "/v1/search", json={"Prefix": "node", "Context": "nodes", "Namespace": "prod"}, headers=prod
        )
        assert r.status_code == 403
        # `all` keeps the contexts it may read in the namespace.
        found = search(client, headers=prod, Prefix="web", Context="all", Namespace="prod")
        assert found["Matches"]["jobs"] == ["web-prod"] and "nodes" not in found["Matches"]
        assert search(client, headers=prod, Prefix="web", Context="all")["Matches"] == {}
        # Across namespaces: the items of those it may read.
        found = search(client, headers=prod, Prefix="web", Context="jobs", Namespace="*")
        assert found["Matches"]["jobs"] == ["web-prod"]
        fuzzy = search(client, "/v1/search/fuzzy", headers=prod, Text="web", Context="all", Namespace="*")
        assert [m["ID"] for m in fuzzy["Matches"]["jobs"]] == ["web-prod"]
        assert "nodes" not in fuzzy["Matches"] and "nodes" not in fuzzy["Truncations"]
        # The management token sees everything; no token at all is refused.
        found = search(client, headers=root, Prefix="", Context="all", Namespace="*")
        assert found["Matches"]["jobs"] == ["web-default", "web-prod"] and found["Matches"]["nodes"] == [
            "node-1"
        ]
        bogus = {"X-Nomad-Token": "00000000-0000-0000-0000-000000000000"}
        assert (
            client.post("/v1/search", json={"Prefix": "", "Context": "all"}, headers=bogus).status_code == 403
        )
        anonymous = client.post("/v1/search", json={"Prefix": "web", "Context": "all", "Namespace": "*"})
        assert anonymous.status_code == 200 and not any(
            anonymous.json()["Matches"].get(c) for c in ("jobs", "nodes")
        )


def test_a_search_is_a_blocking_query(client: TestClient) -> None:
    register(client, mock_job("web"))
    index = search(client, Prefix="web", Context="jobs")["Index"]
    started = time.monotonic()
    r = client.post(f"/v1/search?index={index}&wait=300ms", json={"Prefix": "web", "Context": "jobs"})
    assert r.status_code == 200 and time.monotonic() - started >= 0.3
    assert r.json()["Index"] == index and r.json()["Matches"]["jobs"] == ["web"]
    r = client.post("/v1/search?index=x", json={"Prefix": "web", "Context": "jobs"})
    assert (r.status_code, r.text) == (400, "Invalid index")
    # A bad request is refused before it waits.
    started = time.monotonic()
    r = client.post(f"/v1/search/fuzzy?index={index}&wait=30s", json={"Text": "w", "Context": "jobs"})
    assert r.status_code == 400 and time.monotonic() - started < 5
    r = client.post(f"/v1/search?index={index}&wait=30s", json={"Prefix": "w", "Context": "nope"})
    assert r.status_code == 400 and time.monotonic() - started < 5
