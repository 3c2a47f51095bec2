"""Parameterized jobs and dispatch through the HTTP API, in-process against a real PostgreSQL:
the block read and shown as Nomad's, no eval for the parameterized job, dispatch's answer and
its child, the idempotency token (also raced), the parent's children summary (and a blocking
query on it), every bad input refused with the log unchanged."""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore

from .cluster import job_json, node_json


def parameterized_json(
    job_id: str = "report",
    payload: str = "optional",
    required: tuple[str, ...] = ("customer",),
    optional: tuple[str, ...] = ("format",),
) -> dict[str, Any]:
    body = job_json(job_id, 1, cpu=100, mem=32)
    job = body["Job"]
    job["Type"] = "batch"
    job["Meta"] = {"team": "billing"}
    job["ParameterizedJob"] = {
        "Payload": payload,
        "MetaRequired": list(required),
        "MetaOptional": list(optional),
    }
    job["TaskGroups"][0]["Tasks"][0]["DispatchPayload"] = {"File": "input.json"}
    return body


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def client(database_url: str, store: EventStore) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url="nats://unused")
    with TestClient(create_app(settings, EventStore(database_url))) as c:
        assert c.put("/v1/drover/node/register", json={"Node": node_json("n1")}).status_code == 200
        assert c.put("/v1/jobs", json=job_json("web", 1)).status_code == 200
        r = c.put("/v1/jobs", json=parameterized_json())
        assert r.status_code == 200, r.text
        yield c


def dispatch(c: TestClient, job_id: str = "report", token: str = "", **body: Any) -> Any:
    params = {"idempotency_token": token} if token else {}
    return c.post(f"/v1/job/{job_id}/dispatch", json=body, params=params)


def test_a_parameterized_job_is_registered_without_an_eval_and_runs_until_stopped(client: TestClient) -> None:
    r = client.put("/v1/jobs", json=parameterized_json("again"))
    assert r.status_code == 200
    assert (r.json()["EvalID"], r.json()["EvalCreateIndex"]) == ("", 0)
    assert client.get("/v1/job/again/evaluations").json() == []
    job = client.get("/v1/job/report").json()
    assert job["Status"] == "running"
    assert job["ParameterizedJob"] == {"Payload": "optional", "MetaRequired": ["customer"],
                                       "MetaOptional": ["format"]}  # fmt: skip
    assert job["TaskGroups"][0]["Tasks"][0]["DispatchPayload"] == {"File": "input.json"}
    (stub,) = [j for j in client.get("/v1/jobs").json() if j["ID"] == "report"]
    assert stub["ParameterizedJob"] is True and stub["Periodic"] is False and stub["Status"] == "running"
    # Stopped: dead, with no eval either; a stopped job is not dispatched.
    r = client.delete("/v1/job/report")
    assert r.status_code == 200 and r.json()["EvalID"] == ""
    assert client.get("/v1/job/report").json()["Status"] == "dead"
    assert client.get("/v1/job/report/evaluations").json() == []
    assert dispatch(client, Meta={"customer": "c1"}).status_code == 400


def test_dispatch_registers_a_child_and_its_eval(client: TestClient, store: EventStore) -> None:
    before = store.last_position()
    r = dispatch(client, Payload=b64(b'{"month": 3}'), Meta={"customer": "c1"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert set(out) == {"DispatchedJobID", "EvalID", "EvalCreateIndex", "JobCreateIndex", "Index"}
    assert (out["JobCreateIndex"], out["EvalCreateIndex"], out["Index"]) == (
        before + 1,
        before + 2,
        before + 2,
    )
    assert store.last_position() == before + 2  # the child and its eval, one append
    child_id = out["DispatchedJobID"]
    assert re.fullmatch(r"report/dispatch-\d{10}-[0-9a-f]{8}", child_id), child_id
    # A job ID with a slash: read as is, or escaped as Nomad's clients send it.
    child = client.get(f"/v1/job/{child_id}").json()
    assert client.get(f"/v1/job/{quote(child_id, safe='')}").json()["ID"] == child_id
    assert (child["ID"], child["Name"], child["ParentID"], child["Dispatched"]) == (
        child_id,
        child_id,
        "report",
        True,
    )
    assert base64.b64decode(child["Payload"]) == b'{"month": 3}'
    assert child["Meta"] == {"team": "billing", "customer": "c1"} and child["Status"] == "pending"
    assert child["ParameterizedJob"]["MetaRequired"] == ["customer"] and child["CreateIndex"] == before + 1
    (evaluation,) = client.get(f"/v1/job/{child_id}/evaluations").json()
    assert (
        evaluation["ID"] == out["EvalID"]
        and evaluation["TriggeredBy"] == "job-register"
        and evaluation["JobID"] == child_id
    )
    assert (evaluation["Status"], evaluation["Type"], evaluation["CreateIndex"]) == (
        "pending",
        "batch",
        before + 2,
    )
    assert client.get(f"/v1/job/{child_id}/versions").json()["Versions"][0]["ID"] == child_id
    # The parent is unchanged, and counts its child.
    assert client.get("/v1/job/report").json()["ModifyIndex"] < before + 1
    summary = client.get("/v1/job/report/summary").json()
    assert summary["Children"] == {"Pending": 1, "Running": 0, "Dead": 0}
    assert summary["Summary"] == {"web": {"Queued": 0, "Complete": 0, "Failed": 0, "Running": 0, "Starting": 0,
                                          "Lost": 0, "Unknown": 0}}  # fmt: skip
    stubs = {j["ID"]: j for j in client.get("/v1/jobs").json()}
    assert stubs["report"]["JobSummary"]["Children"] == {"Pending": 1, "Running": 0, "Dead": 0}
    assert stubs[child_id]["ParentID"] == "report" and stubs[child_id]["ParameterizedJob"] is False
    assert stubs["web"]["JobSummary"]["Children"] == {"Pending": 0, "Running": 0, "Dead": 0}


def test_the_id_prefix_template_and_priority(client: TestClient) -> None:
    r = dispatch(client, Meta={"customer": "c1"}, IdPrefixTemplate="march", Priority=70)
    assert r.status_code == 200, r.text
    child_id = r.json()["DispatchedJobID"]
    assert re.fullmatch(r"report/dispatch-march-\d{10}-[0-9a-f]{8}", child_id)
    assert client.get(f"/v1/job/{child_id}").json()["Priority"] == 70
    assert client.get(f"/v1/evaluation/{r.json()['EvalID']}").json()["Priority"] == 70


def test_an_idempotency_token_dispatches_once(client: TestClient, store: EventStore) -> None:
    first = dispatch(client, token="run-1", Meta={"customer": "c1"}).json()
    at = store.last_position()
    again = dispatch(client, token="run-1", Meta={"customer": "c1"})
    assert again.status_code == 200
    child = client.get(f"/v1/job/{first['DispatchedJobID']}").json()
    # Nomad's answer to a repeat: the child the token dispatched, no eval, nothing written.
    assert again.json() == {"DispatchedJobID": first["DispatchedJobID"], "EvalID": "", "EvalCreateIndex": 0,
                            "JobCreateIndex": child["CreateIndex"], "Index": child["ModifyIndex"]}  # fmt: skip
    assert store.last_position() == at
    assert child["DispatchIdempotencyToken"] == "run-1"
    other = dispatch(client, token="run-2", Meta={"customer": "c1"}).json()
    assert other["DispatchedJobID"] != first["DispatchedJobID"] and other["EvalID"]
    # A token is the parent's: another parameterized job may use the same one.
    assert client.put("/v1/jobs", json=parameterized_json("other")).status_code == 200
    assert dispatch(client, "other", token="run-1", Meta={"customer": "c1"}).json()["EvalID"]
    children = [j for j in client.get("/v1/jobs").json() if j["ParentID"] == "report"]
    assert len(children) == 2


def test_concurrent_dispatches_with_one_token_make_one_child(client: TestClient, store: EventStore) -> None:
    before = store.last_position()
    answers: list[dict[str, Any]] = []
    barrier = threading.Barrier(6)

    def send() -> None:
        barrier.wait()
        r = dispatch(client, token="once", Meta={"customer": "c1"})
        assert r.status_code == 200, r.text
        answers.append(r.json())

    threads = [threading.Thread(target=send) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(answers) == 6
    assert len({a["DispatchedJobID"] for a in answers}) == 1
    assert len([a for a in answers if a["EvalID"]]) == 1
    assert store.last_position() == before + 2
    assert client.get("/v1/job/report/summary").json()["Children"]["Pending"] == 1


def test_a_blocking_summary_wakes_when_a_child_is_dispatched(client: TestClient) -> None:
    r = client.get("/v1/job/report/summary")
    index = int(r.headers["X-Nomad-Index"])
    done: list[Any] = []

    def wait() -> None:
        done.append(client.get("/v1/job/report/summary", params={"index": index, "wait": "20s"}))

    t = threading.Thread(target=wait)
    t.start()
    # A change elsewhere does not answer it; a child of the job does.
    client.put("/v1/jobs", json=job_json("unrelated", 1))
    t.join(0.5)
    assert not done
    dispatch(client, Meta={"customer": "c1"})
    t.join(20)
    (answer,) = done
    assert answer.json()["Children"]["Pending"] == 1 and int(answer.headers["X-Nomad-Index"]) > index


BIG = b64(b"x" * (16 * 1024 + 1))


@pytest.mark.parametrize(
    ("job_id", "body", "query", "status", "words"),
    [
        (
            "report",
            {"Payload": BIG, "Meta": {"customer": "c"}},
            "",
            400,
            "Payload is 16385 bytes, over the limit",
        ),
        (
            "report",
            {"Payload": "not base64!", "Meta": {"customer": "c"}},
            "",
            400,
            "Payload is not valid base64",
        ),
        ("report", {}, "", 400, "Meta keys 'customer' are required by job 'report' but missing"),
        ("report", {"Meta": {"customer": "c", "color": "red"}}, "", 400, "Meta keys 'color' are not allowed"),
        ("report", {"Meta": {"customer": "c"}, "Priority": 0.5}, "", 400, "Priority must be an integer"),
        ("report", {"Meta": {"customer": 7}}, "", 400, "Meta.customer must be a string"),
        ("report", {"Meta": ["customer"]}, "", 400, "Meta must be a JSON object"),
        ("report", {"Payload": 12, "Meta": {"customer": "c"}}, "", 400, "Payload must be a string"),
        ("report", {"JobID": "web", "Meta": {"customer": "c"}}, "", 400, "Job ID does not match"),
        ("report", {"Meta": {"customer": "c"}}, "namespace=other", 404, "parameterized job not found"),
        ("web", {}, "", 400, "job 'web' is not a parameterized job"),
        ("nope", {}, "", 404, "parameterized job not found"),
        ("nope", {}, "idempotency_token=t", 404, "parameterized job not found"),
        ("forbids", {"Payload": b64(b"x")}, "", 400, "Payload is forbidden by job 'forbids'"),
        ("requires", {}, "", 400, "Payload is required by job 'requires' but none was given"),
        (
            "report",
            {"Payload": BIG, "Meta": {"nope": "1"}, "Priority": 500},
            "idempotency_token=t",
            400,
            "Dispatch of job 'report' refused:\nPayload is 16385 bytes, over the limit of 16384\n"
            "Meta keys 'nope' are not allowed by job 'report' (required: customer; optional: format)\n"
            "Meta keys 'customer' are required by job 'report' but missing\nPriority 500 is outside 1..100",
        ),
    ],
)
def test_bad_dispatches_are_refused_and_write_nothing(
    client: TestClient,
    store: EventStore,
    job_id: str,
    body: dict[str, Any],
    query: str,
    status: int,
    words: str,
) -> None:
    for name, rule in (("forbids", "forbidden"), ("requires", "required")):
        assert client.put("/v1/jobs", json=parameterized_json(name, rule, required=())).status_code == 200
    before = store.last_position()
    r = client.post(f"/v1/job/{job_id}/dispatch?{query}", json=body)
    assert r.status_code == status, r.text
    assert words in r.text, r.text
    assert store.last_position() == before


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"Type": "service"}, "parameterized is only allowed for batch and sysbatch jobs"),
        ({"ParameterizedJob": {"Payload": "sometimes"}}, "parameterized payload 'sometimes' is unknown"),
        ({"ParameterizedJob": {"MetaRequired": ["a"], "MetaOptional": ["a"]}}, "both required and optional"),
        ({"ParameterizedJob": None}, "cannot update a parameterized job to being non-parameterized"),
        ({"Dispatched": True}, "Dispatched is read-only"),
    ],
)
def test_bad_parameterized_jobs_are_refused_and_write_nothing(
    client: TestClient, store: EventStore, change: dict[str, Any], words: str
) -> None:
    body = parameterized_json()
    body["Job"].update(change)
    before = store.last_position()
    r = client.put("/v1/jobs", json=body)
    assert r.status_code == 400 and words in r.text, r.text
    assert store.last_position() == before


def test_a_task_payload_file_may_not_leave_the_alloc_dir(client: TestClient, store: EventStore) -> None:
    body = parameterized_json("escape")
    body["Job"]["TaskGroups"][0]["Tasks"][0]["DispatchPayload"] = {"File": "../../../etc/passwd"}
    before = store.last_position()
    r = client.put("/v1/jobs", json=body)
    assert r.status_code == 400 and "leads out of the allocation directory" in r.text
    r = client.put("/v1/jobs", json={"Job": {**job_json("d", 1)["Job"], "Dispatched": True}})
    assert r.status_code == 400 and "a job cannot be registered with Dispatched set" in r.text
    assert client.post("/v1/job/report/evaluate").status_code == 400
    assert store.last_position() == before


def test_a_parameterized_job_is_scaled_and_reverted_without_an_eval(
    client: TestClient, store: EventStore
) -> None:
    r = client.post("/v1/job/report/scale", json={"Count": 3, "Target": {"Group": "web"}})
    assert r.status_code == 200, r.text
    assert (r.json()["EvalID"], r.json()["EvalCreateIndex"]) == ("", 0)
    assert r.json()["JobModifyIndex"] == client.get("/v1/job/report").json()["JobModifyIndex"]
    r = client.post("/v1/job/report/revert", json={"JobID": "report", "JobVersion": 0})
    assert r.status_code == 200, r.text
    assert r.json()["EvalID"] == "" and client.get("/v1/job/report").json()["TaskGroups"][0]["Count"] == 1
    assert client.get("/v1/job/report/evaluations").json() == []
