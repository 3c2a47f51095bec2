"""The job restart API in-process against a real PostgreSQL: what a start writes, and every
bad request answered with its reason and nothing written."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.model import Deployment
from drover.model.events import DeploymentUpserted
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore

from .cluster import job_json

JOB = job_json("web", 2)
JOB["Job"]["TaskGroups"][0]["Update"] = {"MaxParallel": 0}


@pytest.fixture
def client(database_url: str, store: EventStore) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url="nats://unused")
    with TestClient(create_app(settings, EventStore(database_url))) as c:
        assert c.put("/v1/jobs", json=JOB).status_code == 200
        yield c


def test_start_list_read_pause_resume_cancel(client: TestClient, store: EventStore) -> None:
    r = client.post("/v1/job/web/restart", json={"BatchSize": "50%", "BatchWait": "10s", "OnError": "fail"})
    assert r.status_code == 200, r.text
    rid, index = r.json()["RestartID"], r.json()["Index"]
    assert index == store.last_position()
    got = client.get(f"/v1/job/web/restart/{rid}")
    assert got.headers["X-Nomad-Index"] == str(index)
    doc = got.json()
    assert (doc["ID"], doc["JobID"], doc["Status"], doc["BatchSize"], doc["BatchWait"], doc["OnError"]) == (
        rid, "web", "running", 1, 10_000_000_000, "fail",
    )  # fmt: skip
    assert [x["ID"] for x in client.get("/v1/job/web/restarts").json()] == [rid]
    for action, status in (("pause", "paused"), ("resume", "running")):
        assert client.post(f"/v1/job/web/restart/{rid}/{action}").status_code == 200
        assert client.get(f"/v1/job/web/restart/{rid}").json()["Status"] == status
    assert client.delete(f"/v1/job/web/restart/{rid}").json()["RestartID"] == rid
    assert client.get(f"/v1/job/web/restart/{rid}").json()["Status"] == "cancelled"
    # Ended: another may start.
    assert client.post("/v1/job/web/restart", json={}).status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"BatchSize": 0}, 400, "BatchSize must be at least 1"),
        ({"BatchSize": -1}, 400, "BatchSize must be a count"),
        ({"BatchSize": "150%"}, 400, "at most 100%"),
        ({"BatchSize": "lots"}, 400, "BatchSize must be a count"),
        ({"BatchSize": True}, 400, "BatchSize"),
        ({"BatchSize": 1.5}, 400, "BatchSize"),
        ({"BatchWait": -1}, 400, "BatchWait must not be negative"),
        ({"BatchWait": "soon"}, 400, "BatchWait must be a duration"),
        ({"Groups": ["nope"]}, 400, "Group 'nope' is not a task group"),
        ({"Tasks": ["nope"]}, 400, "Task 'nope' is not in group 'web'"),
        ({"Tasks": ["web"], "AllTasks": True}, 400, "Tasks cannot be named with AllTasks"),
        ({"Tasks": ["web"], "Reschedule": True}, 400, "Tasks cannot be named with Reschedule"),
        ({"OnError": "retry"}, 400, "OnError must be"),
        ({"Reschedule": "yes"}, 400, "Reschedule must be a boolean"),
        ([1], 400, "Request must be a JSON object"),
    ],
)
def test_a_bad_start_is_refused_and_writes_nothing(
    client: TestClient, store: EventStore, body: Any, status: int, needle: str
) -> None:
    before = store.last_position()
    r = client.post("/v1/job/web/restart", json=body)
    assert r.status_code == status and needle in r.text, r.text
    assert store.last_position() == before


def test_conflicts_and_unknowns(client: TestClient, store: EventStore) -> None:
    def refused(method: str, path: str, status: int, needle: str) -> None:
        before = store.last_position()
        r = client.request(method, path, json={})
        assert r.status_code == status and needle in r.text, (path, r.text)
        assert store.last_position() == before

    refused("POST", "/v1/job/nope/restart", 404, "job not found")
    rid = client.post("/v1/job/web/restart", json={}).json()["RestartID"]
    refused("POST", "/v1/job/web/restart", 409, f"being restarted already ({rid}, running)")
    refused("POST", f"/v1/job/web/restart/{rid}/resume", 400, "can't resume a running restart")
    for method, path in (("GET", "/v1/job/web/restart/nope"), ("POST", "/v1/job/web/restart/nope/pause"),
                         ("POST", "/v1/job/web/restart/nope/resume"), ("DELETE", "/v1/job/web/restart/nope"),
                         ("GET", f"/v1/job/other/restart/{rid}")):  # fmt: skip
        refused(method, path, 404, "not found")
    assert client.delete(f"/v1/job/web/restart/{rid}").status_code == 200
    refused("POST", f"/v1/job/web/restart/{rid}/pause", 400, "can't pause a cancelled restart")
    refused("DELETE", f"/v1/job/web/restart/{rid}", 400, "can't cancel a cancelled restart")
    store.append([DeploymentUpserted(deployment=Deployment(id="d1", job_id="web", status="running"))])
    refused("POST", "/v1/job/web/restart", 409, "active deployment (d1)")
    store.append([DeploymentUpserted(deployment=Deployment(id="d1", job_id="web", status="successful"))])
    assert client.delete("/v1/job/web").status_code == 200
    refused("POST", "/v1/job/web/restart", 409, "is stopped")
