"""Node identity on Drover's client endpoints (/v1/drover/*), in-process against real PostgreSQL
and NATS: a node registers with its SecretID, and every client request must carry the secret
its nodes registered with. Without it, or with another node's, the answer is 403 "Permission
denied" and the log does not move; the secret itself is kept nowhere, only its keyed hash."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from drover.api.app import ROUTERS, create_app
from drover.model.events import EvalsUpserted
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore
from drover.scheduler import evaluate_plan, schedule
from drover.scheduler.planapply import plan_applied_event

from .cluster import job_json, node_json

MINE = str(uuid.uuid4())
THEIRS = str(uuid.uuid4())
NOW = 1_700_000_000_000_000_000


@pytest.fixture
def client(database_url: str, nats_url: str, tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url=nats_url, keyring=str(tmp_path / "keyring.json"))
    with TestClient(create_app(settings, EventStore(database_url))) as c:
        yield c


def register(client: TestClient, node_id: str, secret: str, **fields: Any) -> Any:
    return client.put(
        "/v1/drover/node/register", json={"Node": {**node_json(node_id), **fields, "SecretID": secret}}
    )


def as_node(secret: str) -> dict[str, str]:
    return {"X-Nomad-Token": secret}


def place(client: TestClient, store: EventStore, job_id: str, node_id: str) -> str:
    """A one-alloc job placed (what a worker and the plan applier would do), on `node_id`."""
    body = job_json(job_id, 1, rolling=False)
    body["Job"]["Constraints"] = [{"LTarget": "${node.unique.id}", "RTarget": node_id, "Operand": "="}]
    eval_id = client.put("/v1/jobs", json=body).json()["EvalID"]
    state = store.replay()
    evaluation = state.eval(eval_id)
    assert evaluation is not None
    res = schedule(state, evaluation, NOW)
    store.append([plan_applied_event(evaluate_plan(state, res.plan), NOW), EvalsUpserted(evals=[res.eval])])
    (alloc,) = client.get(f"/v1/job/{job_id}/allocations").json()
    assert alloc["NodeID"] == node_id
    return str(alloc["ID"])


def service(alloc_id: str, node_id: str, job_id: str) -> dict[str, Any]:
    return {
        "ID": f"_nomad-task-{alloc_id}-web-web-http", "ServiceName": "web", "Namespace": "default",
        "NodeID": node_id, "Datacenter": "dc1", "JobID": job_id, "AllocID": alloc_id,
        "Address": "127.0.0.1", "Port": 8080,
    }  # fmt: skip


def test_a_registered_node_answers_only_to_its_secret(client: TestClient, store: EventStore) -> None:
    assert register(client, "n1", MINE).status_code == 200
    assert register(client, "n2", THEIRS).status_code == 200
    position = store.last_position()
    for headers in ({}, as_node(THEIRS), as_node(str(uuid.uuid4())), {"X-Nomad-Token": " "}):
        for method, path, body in (
            ("PUT", "/v1/drover/node/n1/heartbeat", None),
            ("PUT", "/v1/drover/heartbeats", {"NodeIDs": ["n1"]}),
            ("PUT", "/v1/drover/heartbeats", {"NodeIDs": ["n2", "n1"]}),  # with THEIRS: one is not theirs
            ("PUT", "/v1/drover/node/n1/status", {"Status": "down"}),
        ):
            r = client.request(method, path, json=body, headers=headers)
            assert (r.status_code, r.text) == (403, "Permission denied"), (headers, path)
    assert store.last_position() == position
    # The node's own secret, in either of Nomad's headers.
    r = client.put("/v1/drover/node/n1/heartbeat", headers=as_node(MINE))
    assert r.status_code == 200, r.text
    r = client.put(
        "/v1/drover/heartbeats", json={"NodeIDs": ["n1"]}, headers={"Authorization": f"Bearer {MINE}"}
    )
    assert r.status_code == 200, r.text
    r = client.put("/v1/drover/node/n1/status", json={"Status": "down"}, headers=as_node(MINE))
    assert r.status_code == 200 and store.last_position() > position
    # An unknown node has no secret to keep: its heartbeat is a 404 (the agent registers again).
    assert client.put("/v1/drover/node/ghost/heartbeat", headers=as_node(MINE)).status_code == 404


def test_one_secret_may_stand_for_many_nodes(client: TestClient) -> None:
    """drover sim registers its nodes with one secret, and beats them in one request."""
    for n in ("s1", "s2", "s3"):
        assert register(client, n, MINE).status_code == 200
    r = client.put("/v1/drover/heartbeats", json={"NodeIDs": ["s1", "s2", "s3"]}, headers=as_node(MINE))
    assert r.status_code == 200 and set(r.json()["HeartbeatTTLs"]) == {"s1", "s2", "s3"}


def test_registering_again_with_another_secret_is_refused(client: TestClient, store: EventStore) -> None:
    assert register(client, "n1", MINE).status_code == 200
    position = store.last_position()
    r = register(client, "n1", THEIRS, Datacenter="dc9")
    assert (r.status_code, r.text) == (403, "Permission denied")
    assert store.last_position() == position
    assert client.get("/v1/node/n1").json()["Datacenter"] == "dc1"
    # With its own secret it registers again; purged, it may register with any.
    assert register(client, "n1", MINE, Datacenter="dc2").status_code == 200
    assert client.post("/v1/node/n1/purge").status_code == 200
    assert register(client, "n1", THEIRS).status_code == 200
    assert client.put("/v1/drover/node/n1/heartbeat", headers=as_node(THEIRS)).status_code == 200
    assert client.put("/v1/drover/node/n1/heartbeat", headers=as_node(MINE)).status_code == 403


@pytest.mark.parametrize(
    ("secret", "problem"),
    [(None, "Node.SecretID is required"), ("", "Node.SecretID is required"),
     ("hunter2", "Node.SecretID must be a UUID"), (7, "Node.SecretID must be a UUID")],
)  # fmt: skip
def test_a_registration_without_a_uuid_secret_is_refused(
    client: TestClient, store: EventStore, secret: object, problem: str
) -> None:
    node = {k: v for k, v in node_json("n1").items() if k != "SecretID"}
    if secret is not None:
        node["SecretID"] = secret
    position = store.last_position()
    r = client.put("/v1/drover/node/register", json={"Node": node})
    assert r.status_code == 400 and problem in r.text.splitlines()
    assert store.last_position() == position


def test_alloc_and_service_reports_only_for_the_callers_nodes(client: TestClient, store: EventStore) -> None:
    register(client, "mine", MINE)
    register(client, "theirs", THEIRS)
    a_mine, a_theirs = place(client, store, "a", "mine"), place(client, store, "b", "theirs")
    position = store.last_position()

    def report(secret: str, alloc_id: str, **body: Any) -> Any:
        update = {"ID": alloc_id, "ClientStatus": "running"}
        return client.put(
            "/v1/drover/allocs/status", json={"Updates": [update], **body}, headers=as_node(secret)
        )

    refused = [
        report(MINE, a_theirs),  # the sim's form: no NodeID, the alloc's node decides
        report(MINE, a_theirs, NodeID="mine"),  # an agent naming itself, reporting another's alloc
        report(MINE, a_mine, NodeID="theirs"),
        report(THEIRS, a_mine),
        client.put(
            "/v1/drover/services",
            json={"Services": [service(a_theirs, "theirs", "b")]},
            headers=as_node(MINE),
        ),
        client.put("/v1/drover/services", json={"NodeID": "theirs", "Deregister": []}, headers=as_node(MINE)),
        client.put("/v1/drover/services", json={"Services": [service(a_mine, "mine", "a")]}),
    ]
    assert [(r.status_code, r.text) for r in refused] == [(403, "Permission denied")] * len(refused)
    assert store.last_position() == position
    assert report(MINE, a_mine, NodeID="mine").status_code == 200
    assert report(THEIRS, a_theirs).status_code == 200
    svc = service(a_theirs, "theirs", "b")
    r = client.put(
        "/v1/drover/services", json={"NodeID": "theirs", "Services": [svc]}, headers=as_node(THEIRS)
    )
    assert r.status_code == 200, r.text
    # Only the node holding a registration may remove it.
    position = store.last_position()
    r = client.put("/v1/drover/services", json={"Deregister": [svc["ID"]]}, headers=as_node(MINE))
    assert (r.status_code, store.last_position()) == (403, position)
    assert (
        client.put(
            "/v1/drover/services", json={"Deregister": [svc["ID"]]}, headers=as_node(THEIRS)
        ).status_code
        == 200
    )
    # Following allocs by node prefix shows the caller's nodes' allocs alone.
    for secret, alloc_id in ((MINE, a_mine), (THEIRS, a_theirs)):
        r = client.get("/v1/drover/allocs/changes", params={"index": 0}, headers=as_node(secret))
        assert r.status_code == 200 and {a["ID"] for a in r.json()} == {alloc_id}
    assert client.get("/v1/drover/allocs/changes", params={"index": 0}).status_code == 403


def test_every_client_route_wants_a_secret(client: TestClient, store: EventStore) -> None:
    """Every /v1/drover route of the app, without a secret and with an unknown one: 403 and
    nothing written (registering aside: its secret is the body's)."""
    register(client, "n1", MINE)
    routes = [
        (method, route.path)
        for module in ROUTERS
        for route in module.router.routes
        if isinstance(route, APIRoute) and route.path.startswith("/v1/drover/")
        for method in sorted(route.methods)
    ]
    assert len(routes) >= 12
    bodies = {
        "/v1/drover/heartbeats": {"NodeIDs": ["n1"]},
        "/v1/drover/node/{node_id}/status": {"Status": "ready"},
        "/v1/drover/allocs/status": {"Updates": []},  # naming no node: a secret no node has is refused too
        "/v1/drover/services": {"Services": [], "Deregister": []},
    }
    position = store.last_position()
    for method, path in routes:
        if path == "/v1/drover/node/register":
            continue
        body = bodies.get(path)
        for headers in ({}, as_node(THEIRS)):
            r = client.request(method, path.replace("{node_id}", "n1"), json=body, headers=headers)
            assert (r.status_code, r.text) == (403, "Permission denied"), (method, path, headers)
    assert store.last_position() == position


def test_the_secret_is_kept_nowhere_but_its_hash(
    client: TestClient, store: EventStore, tmp_path: Path
) -> None:
    register(client, "n1", MINE)
    client.put("/v1/drover/node/n1/heartbeat", headers=as_node(MINE))
    node = client.get("/v1/node/n1").json()
    assert "SecretID" not in node and MINE not in json.dumps(node)
    assert MINE not in client.get("/v1/nodes").text
    with store.engine.connect() as conn:
        for table, column in (("events", "data::text"), ("nodes", "doc::text"), ("nodes", "secret_hash")):
            found = conn.exec_driver_sql(
                f"SELECT count(*) FROM {table} WHERE {column} LIKE %s", (f"%{MINE}%",)
            )
            assert found.scalar_one() == 0, table
        (stored,) = conn.exec_driver_sql("SELECT secret_hash FROM nodes WHERE id = 'n1'").one()
    assert len(stored) == 64 and stored in store.read(0, 10)[0].event.model_dump_json()
    # Keyed: the hash is not a plain digest of the secret, and the key stays beside the keyring.
    import hashlib

    assert stored != hashlib.sha256(MINE.encode()).hexdigest()
    key = tmp_path / "node-secret.key"
    assert key.stat().st_mode & 0o777 == 0o600


def test_a_node_registered_before_nodes_had_secrets_takes_the_first_it_registers_with(
    client: TestClient, store: EventStore
) -> None:
    """An upgraded cluster's node has no secret to match: its calls are refused until its
    agent registers again (the agent does on a 403), and the secret it registers with is its."""
    from drover.model import Node
    from drover.model.events import NodeRegistered

    store.append(
        [
            NodeRegistered(
                node=Node.model_validate({k: v for k, v in node_json("old").items() if k != "SecretID"})
            )
        ]
    )
    assert client.put("/v1/drover/node/old/heartbeat", headers=as_node(MINE)).status_code == 403
    assert register(client, "old", MINE).status_code == 200
    assert client.put("/v1/drover/node/old/heartbeat", headers=as_node(MINE)).status_code == 200
    assert register(client, "old", THEIRS).status_code == 403
