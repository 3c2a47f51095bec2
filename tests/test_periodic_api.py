"""Periodic jobs through the HTTP API in-process, against a real PostgreSQL: the block as Nomad
writes it, no eval for the parent, its status, periodic force, and bad input refused with
nothing written."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore

from .cluster import job_json
from .evals import NO_LINKS, links


def periodic_job(job_id: str = "report", job_type: str = "batch", **periodic: Any) -> dict[str, Any]:
    body = job_json(job_id, 1)
    body["Job"]["Type"] = job_type
    body["Job"]["Periodic"] = periodic or {"Crons": ["0 3 * * *"]}
    return body


@pytest.fixture
def client(database_url: str, store: EventStore) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url="nats://unused")
    with TestClient(create_app(settings, EventStore(database_url))) as c:
        yield c


def test_a_periodic_job_as_nomad_writes_it_is_registered_without_an_eval(
    client: TestClient, store: EventStore
) -> None:
    r = client.put("/v1/jobs", json=periodic_job(Crons=["*/5 * * * *"], TimeZone="Europe/Paris"))
    assert r.status_code == 200, r.text
    out = r.json()
    assert (out["EvalID"], out["EvalCreateIndex"]) == ("", 0) and out["JobModifyIndex"] == out["Index"] == 1
    job = client.get("/v1/job/report").json()
    assert job["Periodic"] == {"Enabled": True, "Spec": "", "Specs": ["*/5 * * * *"], "SpecType": "cron",
                               "ProhibitOverlap": False, "TimeZone": "Europe/Paris"}  # fmt: skip
    # Running while periodic, though nothing of its own runs: its children will.
    assert job["Status"] == "running"
    assert [j["Status"] for j in client.get("/v1/jobs").json()] == ["running"]
    assert client.get("/v1/job/report/evaluations").json() == []
    assert store.last_position() == 1
    # Scaling it changes its next children's count: no eval either.
    out = client.put("/v1/job/report/scale", json={"Count": 3, "Target": {"Group": "web"}}).json()
    assert (out["EvalID"], out["EvalCreateIndex"], out["JobModifyIndex"], out["Index"]) == ("", 0, 2, 3)
    assert client.get("/v1/job/report").json()["TaskGroups"][0]["Count"] == 3
    # Stopping it writes no eval either; it is dead then.
    out = client.delete("/v1/job/report").json()
    assert (out["EvalID"], out["EvalCreateIndex"]) == ("", 0)
    assert client.get("/v1/job/report").json()["Status"] == "dead"
    assert store.last_position() == 4
    assert client.get("/v1/job/report/evaluations").json() == []


def test_force_launches_a_child_with_a_periodic_job_eval(client: TestClient, store: EventStore) -> None:
    client.put("/v1/jobs", json=periodic_job(ProhibitOverlap=True, Spec="@daily"))
    before = time.time_ns() // 1_000_000_000
    out = client.post("/v1/job/report/periodic/force").json()
    after = time.time_ns() // 1_000_000_000
    assert set(out) == {"EvalID", "EvalCreateIndex", "Index"}
    # The child's registration and its eval: one append, two positions.
    assert (out["EvalCreateIndex"], out["Index"]) == (3, 3)
    evaluation = client.get(f"/v1/evaluation/{out['EvalID']}").json()
    child_id = evaluation["JobID"]
    assert child_id.startswith("report/periodic-") and before <= int(child_id.rsplit("-", 1)[1]) <= after
    assert (evaluation["TriggeredBy"], evaluation["Status"], evaluation["Type"]) == (
        "periodic-job",
        "pending",
        "batch",
    )
    assert evaluation["CreateIndex"] == 3
    assert links(evaluation) == NO_LINKS
    child = client.get(f"/v1/job/{quote(child_id, safe='')}").json()
    assert (child["ID"], child["Name"], child["ParentID"]) == (child_id, child_id, "report")
    assert child["Periodic"] is None
    assert child["TaskGroups"][0]["Name"] == "web" and child["Version"] == 0
    stubs = client.get("/v1/jobs", params={"prefix": "report"}).json()
    assert [(j["ID"], j["ParentID"]) for j in stubs] == [("report", ""), (child_id, "report")]
    # The parent is unchanged, and still has no eval of its own.
    assert client.get("/v1/job/report").json()["ModifyIndex"] == 1
    assert client.get("/v1/job/report/evaluations").json() == []
    assert [e["ID"] for e in client.get(f"/v1/job/{quote(child_id, safe='')}/evaluations").json()] == [
        out["EvalID"]
    ]


@pytest.mark.parametrize(
    ("setup", "path", "status", "needle"),
    [
        (None, "/v1/job/nope/periodic/force", 404, "job not found"),
        (job_json("web", 1), "/v1/job/web/periodic/force", 400, "job 'web' is not periodic"),
        (periodic_job(Enabled=False, Spec="@daily"), "/v1/job/report/periodic/force", 400, "disabled"),
        (periodic_job(), "/v1/job/report/evaluate", 400, "can't evaluate periodic job 'report'"),
    ],
)
def test_force_refuses_what_is_not_launched_periodically(
    client: TestClient, store: EventStore, setup: Any, path: str, status: int, needle: str
) -> None:
    if setup is not None:
        assert client.put("/v1/jobs", json=setup).status_code == 200
    before = store.last_position()
    r = client.post(path)
    assert r.status_code == status and needle in r.text, r.text
    assert store.last_position() == before


def test_a_stopped_periodic_job_is_not_forced(client: TestClient, store: EventStore) -> None:
    client.put("/v1/jobs", json=periodic_job())
    client.delete("/v1/job/report")
    r = client.post("/v1/job/report/periodic/force")
    assert r.status_code == 400 and "stopped" in r.text
    assert store.last_position() == 2


@pytest.mark.parametrize(
    ("body", "needles"),
    [
        (periodic_job(Crons=["*/5 * * * *", "61 * * * *"]), ["'61 * * * *' is not a valid cron expression"]),
        (periodic_job(Spec="every day"), ["'every day' is not a valid cron expression"]),
        (periodic_job(Crons=["@daily"], TimeZone="Mars/Olympus"), ["time zone 'Mars/Olympus' is unknown"]),
        (periodic_job(job_type="service", Crons=["@daily"]), ["only allowed for batch and sysbatch jobs"]),
        (periodic_job(Spec="@daily", Crons=["@hourly"]), ["not both"]),
        (periodic_job(Crons=[]), ["spec is empty"]),
        # Every problem at once.
        (
            periodic_job(job_type="service", Crons=["0 0 31 2 *"], TimeZone="Nowhere"),
            ["only allowed for batch", "'0 0 31 2 *' is not a valid cron", "time zone 'Nowhere'"],
        ),
    ],
)
def test_bad_periodic_blocks_are_refused_and_write_nothing(
    client: TestClient, store: EventStore, body: dict[str, Any], needles: list[str]
) -> None:
    r = client.put("/v1/jobs", json=body)
    assert r.status_code == 400, r.text
    for needle in needles:
        assert needle in r.text, r.text
    assert store.last_position() == 0


def test_a_job_cannot_become_periodic(client: TestClient, store: EventStore) -> None:
    plain = job_json("report", 1)
    plain["Job"]["Type"] = "batch"
    client.put("/v1/jobs", json=plain)
    before = store.last_position()
    r = client.put("/v1/jobs", json=periodic_job())
    assert r.status_code == 400 and "cannot update non-periodic job 'report' to being periodic" in r.text
    assert store.last_position() == before
