"""Nomad's `?filter=` on the list endpoints, in-process against a real PostgreSQL: each list
keeps the items whose document passes, the filter applies before the page is cut (per_page
counts what passes, X-Nomad-NextToken names the next that does, across read batches), and a
filter that does not parse or cannot apply is a 400 naming the problem."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from drover.api import listfilter
from drover.api.app import create_app
from drover.model.events import EvalsUpserted
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore
from drover.scheduler import evaluate_plan, schedule
from drover.scheduler.planapply import plan_applied_event

from .cluster import node_json

NOW = 1_700_000_000_000_000_000


def job(job_id: str, owner: str, namespace: str = "default", count: int = 1) -> dict[str, Any]:
    task = {"Name": "t", "Driver": "mock", "Resources": {"CPU": 10, "MemoryMB": 16}}
    group = {"Name": f"{job_id}-g", "Count": count, "Tasks": [task]}
    return {"Job": {"ID": job_id, "Namespace": namespace, "Datacenters": ["dc1"], "Meta": {"owner": owner},
                    "TaskGroups": [group]}}  # fmt: skip


def place(store: EventStore, eval_id: str) -> None:
    state = store.replay()
    evaluation = state.eval(eval_id)
    assert evaluation is not None
    res = schedule(state, evaluation, NOW)
    store.append([plan_applied_event(evaluate_plan(state, res.plan), NOW), EvalsUpserted(evals=[res.eval])])


@pytest.fixture
def client(database_url: str, tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url="nats://unused", data_dir=str(tmp_path),
                        keyring=str(tmp_path / "keyring.json"))  # fmt: skip
    with TestClient(create_app(settings, EventStore(database_url))) as c:
        yield c


@pytest.fixture
def cluster(client: TestClient, store: EventStore) -> dict[str, str]:
    """Two nodes, seven jobs (owners ops, dev, ops, ...), the first three placed; their evals."""
    for n in ("node-1", "node-2"):
        body = node_json(n, dc="dc1" if n == "node-1" else "dc2")
        assert client.put("/v1/drover/node/register", json={"Node": body}).status_code == 200
    evals = {}
    for n in range(7):
        r = client.put("/v1/jobs", json=job(f"job-{n}", "ops" if n % 2 == 0 else "dev"))
        assert r.status_code == 200, r.text
        evals[f"job-{n}"] = r.json()["EvalID"]
    for n in range(3):
        place(store, evals[f"job-{n}"])
    return evals


def ids(r: Any, key: str = "ID") -> list[str]:
    assert r.status_code == 200, r.text
    return [item[key] for item in r.json()]


def test_lists_keep_what_passes_the_filter(client: TestClient, cluster: dict[str, str]) -> None:
    get = client.get
    assert ids(get("/v1/jobs", params={"filter": 'Meta.owner == "ops"'})) == [
        "job-0",
        "job-2",
        "job-4",
        "job-6",
    ]
    # The job's own fields (TaskGroups) and its stub's (Status, JobSummary) alike.
    assert ids(get("/v1/jobs", params={"filter": 'any TaskGroups as g { g.Name == "job-3-g" }'})) == ["job-3"]
    assert ids(get("/v1/jobs", params={"filter": "JobSummary.Summary is not empty and Type == service"})) == [
        f"job-{n}" for n in range(7)
    ]
    assert ids(get("/v1/jobs", params={"filter": 'Meta.owner == "ops"', "prefix": "job-4"})) == ["job-4"]
    assert ids(get("/v1/jobs", params={"filter": "Meta.owner == nobody"})) == []

    allocs = get("/v1/allocations").json()
    assert len(allocs) == 3
    assert ids(get("/v1/allocations", params={"filter": 'JobID == "job-1"'})) == [
        a["ID"] for a in allocs if a["JobID"] == "job-1"
    ]
    assert ids(get("/v1/allocations", params={"filter": 'Name matches "^job-[02]"'})) == sorted(
        a["ID"] for a in allocs if a["JobID"] in ("job-0", "job-2")
    )
    assert ids(get("/v1/evaluations", params={"filter": 'JobID == "job-5"'})) == [cluster["job-5"]]
    assert ids(get("/v1/evaluations", params={"filter": 'Status == "complete"'})) == sorted(
        cluster[f"job-{n}"] for n in range(3)
    )
    assert get("/v1/evaluations/count", params={"filter": 'Status == "pending"'}).json() == {"Count": 4}
    assert ids(get("/v1/job/job-1/evaluations", params={"filter": 'TriggeredBy == "job-register"'})) == [
        cluster["job-1"]
    ]
    assert ids(get("/v1/job/job-1/allocations", params={"filter": "ClientStatus == running"})) == []
    assert len(ids(get("/v1/job/job-1/allocations", params={"filter": "ClientStatus == pending"}))) == 1

    assert ids(get("/v1/nodes", params={"filter": "Datacenter == dc2"})) == ["node-2"]
    assert ids(get("/v1/nodes", params={"filter": 'Attributes["kernel.name"] == linux'})) == [
        "node-1",
        "node-2",
    ]
    node = allocs[0]["NodeID"]
    assert ids(get(f"/v1/node/{node}/allocations", params={"filter": 'JobID == "nothing"'})) == []
    on_node = [a["ID"] for a in allocs if a["NodeID"] == node]
    assert sorted(
        ids(get(f"/v1/node/{node}/allocations", params={"filter": "Namespace == default"}))
    ) == sorted(on_node)

    assert client.put("/v1/namespace/prod", json={"Name": "prod", "Description": "p"}).status_code == 200
    assert ids(get("/v1/namespaces", params={"filter": "Description == p"}), "Name") == ["prod"]
    for path in ("app/one", "app/two", "db/one"):
        r = client.put(f"/v1/var/{path}", json={"Path": path, "Items": {"k": "v"}})
        assert r.status_code == 200, r.text
    assert ids(get("/v1/vars", params={"filter": 'Path matches "one$"'}), "Path") == ["app/one", "db/one"]
    # The filter sees a variable's metadata, never its items.
    assert ids(get("/v1/vars", params={"filter": "Items is not empty"}), "Path") == []
    assert ids(get("/v1/node/pools", params={"filter": 'Name != "all"'}), "Name") == ["default"]
    assert get("/v1/deployments", params={"filter": "Status == running"}).json() == [
        d for d in get("/v1/deployments").json() if d["Status"] == "running"
    ]
    assert get("/v1/scaling/policies", params={"filter": "Enabled == true"}).json() == []
    assert get("/v1/services", params={"filter": "Namespace == default"}).json() == []


def test_the_filter_comes_before_the_page(
    client: TestClient, cluster: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ops = ["job-0", "job-2", "job-4", "job-6"]
    for batch in (512, 1, 2):  # the whole list in one read, and batches smaller than a page
        monkeypatch.setattr(listfilter, "BATCH", batch)
        r = client.get("/v1/jobs", params={"filter": "Meta.owner == ops", "per_page": "2"})
        assert ids(r) == ops[:2] and r.headers["X-Nomad-NextToken"] == "default.job-4", batch
        r = client.get(
            "/v1/jobs", params={"filter": "Meta.owner == ops", "per_page": "2", "next_token": "default.job-4"}
        )
        assert ids(r) == ops[2:] and "X-Nomad-NextToken" not in r.headers
        # A token between matches starts at the next that passes.
        r = client.get(
            "/v1/jobs", params={"filter": "Meta.owner == ops", "per_page": "3", "next_token": "default.job-1"}
        )
        assert ids(r) == ops[1:] and "X-Nomad-NextToken" not in r.headers
        r = client.get("/v1/evaluations", params={"filter": "Status == pending", "per_page": "3"})
        pending = sorted(cluster[f"job-{n}"] for n in range(3, 7))
        assert ids(r) == pending[:3] and r.headers["X-Nomad-NextToken"] == pending[3]


@pytest.mark.parametrize(
    ("path", "expression", "problem"),
    [
        ("/v1/jobs", "Meta.owner ==", "failed to read filter expression: column 14: expected a value"),
        ("/v1/jobs", '(Status == "running"', "column 1: Unmatched parentheses"),
        ("/v1/allocations", "ClientStatus = running", "column 14: expected an operator"),
        ("/v1/nodes", "Name == web)", "Unmatched parentheses"),
        ("/v1/evaluations", 'Status matches "("', "regular expression"),
        ("/v1/vars", "Path ==", "expected a value"),
        ("/v1/namespaces", "and", "expected an operator"),
        ("/v1/deployments", "x in 3", "Invalid selector"),
        ("/v1/node/pools", "`x", "Unterminated string literal"),
        ("/v1/scaling/policies", "Enabled ==", "expected a value"),
        ("/v1/services", "!", "expected a selector or a value"),
        ("/v1/job/job-1/allocations", "a ==", "expected a value"),
        ("/v1/jobs", "Priority contains 5", "failed to read result page: Priority is an integer"),
        ("/v1/nodes", "Name.First == x", "failed to read result page: Name is a string"),
    ],
)
def test_a_bad_filter_is_a_400_naming_the_problem(
    client: TestClient, cluster: dict[str, str], path: str, expression: str, problem: str
) -> None:
    r = client.get(path, params={"filter": expression})
    assert r.status_code == 400 and problem in r.text, r.text
    # Refused before a blocking query waits.
    r = client.get(path, params={"filter": expression, "index": "999999", "wait": "5s"})
    assert r.status_code == 400


def test_acl_lists_filter_their_stubs(database_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=database_url, nats_url="nats://unused", data_dir=str(tmp_path),
                        keyring=str(tmp_path / "keyring.json"), acl_enabled=True,
                        acl_token_min_expiration_ttl=0.0)  # fmt: skip
    with TestClient(create_app(settings, EventStore(database_url))) as client:
        boot = client.post("/v1/acl/bootstrap").json()
        root = {"X-Nomad-Token": boot["SecretID"]}
        rules = 'namespace "default" { policy = "read" }'
        for name in ("reader", "other"):
            r = client.put(f"/v1/acl/policy/{name}", json={"Name": name, "Rules": rules}, headers=root)
            assert r.status_code == 200
            r = client.post(
                "/v1/acl/token", json={"Name": name, "Type": "client", "Policies": [name]}, headers=root
            )
            assert r.status_code == 200
        r = client.get("/v1/acl/tokens", params={"filter": 'Type == "client"'}, headers=root)
        assert sorted(t["Name"] for t in r.json()) == ["other", "reader"]
        r = client.get("/v1/acl/tokens", params={"filter": 'Type == "client"', "per_page": "1"}, headers=root)
        assert len(r.json()) == 1 and r.headers["X-Nomad-NextToken"]
        # The filter judges the stub: a SecretID is not there to be matched.
        r = client.get("/v1/acl/tokens", params={"filter": f'SecretID == "{boot["SecretID"]}"'}, headers=root)
        assert r.json() == []
        r = client.get("/v1/acl/policies", params={"filter": 'Name matches "^re"'}, headers=root)
        assert [p["Name"] for p in r.json()] == ["reader"]
        r = client.get("/v1/acl/policies", params={"filter": "Name =="}, headers=root)
        assert r.status_code == 400
