"""Namespaces through the HTTP API in-process, against a real PostgreSQL, as Nomad has them:
`default` there from the start (and after a rebuild) and never deleted; namespaces written,
read, listed by prefix and deleted only once nothing live is left in them, in Nomad's words;
a register's namespace (?namespace= over the request's over the job's), an unknown one refused
with nothing written, the namespace's Capabilities enforced; every list in one namespace or,
with `*`, in all; reads and blocking queries scoped by namespace."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.model.events import AllocClientUpdate, AllocsClientUpdated, EvalsUpserted
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore
from drover.scheduler import evaluate_plan, schedule
from drover.scheduler.planapply import plan_applied_event

from .cluster import job_json, node_auth, node_json

NOW = 1_700_000_000_000_000_000


@pytest.fixture
def client(database_url: str, store: EventStore) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url="nats://unused")
    with TestClient(create_app(settings, EventStore(database_url))) as c:
        c.auth = node_auth()  # the secret of the nodes the tests register (node_json)
        yield c


def _job(job_id: str, count: int = 1, *, namespace: str | None = None, **fields: Any) -> dict[str, Any]:
    body = job_json(job_id, count, rolling=False)
    if namespace is not None:
        body["Job"]["Namespace"] = namespace
    body["Job"].update(fields)
    return body


def _put_namespace(client: TestClient, name: str, **fields: Any) -> int:
    r = client.put(f"/v1/namespace/{name}", json={"Name": name, **fields})
    assert r.status_code == 200, r.text
    assert r.json() is None
    return int(r.headers["X-Nomad-Index"])


def _commit_plan(store: EventStore, eval_id: str) -> None:
    """What a worker and the plan applier would do for `eval_id` (no services run here)."""
    state = store.replay()
    evaluation = state.eval(eval_id)
    assert evaluation is not None
    res = schedule(state, evaluation, NOW)
    store.append([plan_applied_event(evaluate_plan(state, res.plan), NOW), EvalsUpserted(evals=[res.eval])])


def _refused(client: TestClient, store: EventStore, method: str, path: str, status: int, **kw: Any) -> str:
    """The refusal's text, checking that nothing was written."""
    before = store.last_position()
    r = client.request(method, path, **kw)
    assert r.status_code == status, r.text
    assert store.last_position() == before
    return r.text


def test_default_is_there_from_the_start_and_after_a_rebuild(client: TestClient, store: EventStore) -> None:
    default = {
        "Name": "default", "Description": "Default shared namespace", "Quota": "", "Capabilities": None,
        "NodePoolConfiguration": None, "VaultConfiguration": None, "ConsulConfiguration": None, "Meta": None,
        "CreateIndex": 1, "ModifyIndex": 1,
    }  # fmt: skip
    assert store.last_position() == 0  # no event made it
    assert client.get("/v1/namespaces").json() == [default]
    assert client.get("/v1/namespace/default").json() == default
    store.rebuild_projections()
    assert client.get("/v1/namespaces").json() == [default]
    # Written, it keeps being created at 1.
    index = _put_namespace(client, "default", Description="shared", Meta={"owner": "ops"})
    got = client.get("/v1/namespace/default").json()
    assert (got["Description"], got["Meta"], got["CreateIndex"], got["ModifyIndex"]) == (
        "shared", {"owner": "ops"}, 1, index
    )  # fmt: skip
    _put_namespace(client, "prod", Capabilities={"DisabledTaskDrivers": ["raw_exec"]})
    _put_namespace(client, "gone")
    client.delete("/v1/namespace/gone")
    before = store.projection_dump()
    listed = client.get("/v1/namespaces").json()
    assert [n["Name"] for n in listed] == ["default", "prod"]
    store.rebuild_projections()
    assert store.projection_dump() == before
    assert client.get("/v1/namespaces").json() == listed
    replayed = store.replay()
    assert sorted(replayed.namespaces) == ["default", "prod"]
    assert replayed.namespace("default").description == "shared"  # type: ignore[union-attr]


def test_namespaces_are_written_read_and_listed(client: TestClient, store: EventStore) -> None:
    caps = {"EnabledTaskDrivers": ["docker", "mock"], "DisabledTaskDrivers": ["raw_exec"]}
    created = _put_namespace(
        client, "prod-eng", Description="Production", Meta={"team": "eng"}, Capabilities=caps
    )
    got = client.get("/v1/namespace/prod-eng")
    assert got.status_code == 200 and int(got.headers["X-Nomad-Index"]) == store.last_position()
    doc = got.json()
    assert (doc["Name"], doc["Description"], doc["Meta"], doc["Quota"]) == (
        "prod-eng",
        "Production",
        {"team": "eng"},
        "",
    )
    assert doc["Capabilities"] == {**caps, "EnabledNetworkModes": None, "DisabledNetworkModes": None}
    assert doc["CreateIndex"] == doc["ModifyIndex"] == created
    # Written again whole: what it leaves out is gone, its creation kept.
    again = _put_namespace(client, "prod-eng", Description="Prod")
    doc = client.get("/v1/namespace/prod-eng").json()
    assert (doc["Description"], doc["Meta"], doc["Capabilities"]) == ("Prod", None, None)
    assert (doc["CreateIndex"], doc["ModifyIndex"]) == (created, again)
    # POST /v1/namespace takes the name from the body, as Nomad's API client sends it.
    r = client.post("/v1/namespace", json={"Name": "dev", "Description": "Development"})
    assert r.status_code == 200 and r.json() is None
    assert [n["Name"] for n in client.get("/v1/namespaces").json()] == ["default", "dev", "prod-eng"]
    assert [n["Name"] for n in client.get("/v1/namespaces", params={"prefix": "prod"}).json()] == ["prod-eng"]
    assert [n["Name"] for n in client.get("/v1/namespaces", params={"prefix": "d"}).json()] == [
        "default",
        "dev",
    ]
    assert client.get("/v1/namespaces", params={"prefix": "x"}).json() == []
    r = client.get("/v1/namespace/nope")
    assert r.status_code == 404 and r.text == "Namespace not found"


@pytest.mark.parametrize(
    ("path", "body", "words"),
    [
        ("/v1/namespace/prod", {"Name": "dev"}, "Namespace name does not match request path"),
        ("/v1/namespace/prod", {}, "Namespace name does not match request path"),
        ("/v1/namespace", {"Name": "bad name"}, 'Invalid namespace "bad name":\ninvalid name "bad name". Must match regex ^[a-zA-Z0-9-]{1,128}$'),
        ("/v1/namespace", {"Name": "a", "Description": "x" * 257}, "description longer than 256"),
        ("/v1/namespace", {"Name": "a", "Quota": "q"}, 'namespace "a" using non-existent quota "q"'),
        ("/v1/namespace", {"Name": "a", "NodePoolConfiguration": {"Default": "p"}},
         "invalid node pool configuration: Node Pools Governance is unlicensed."),
        ("/v1/namespace", {"Name": "a", "Meta": {"k": 1}}, "Meta.k must be a string"),
        ("/v1/namespace", {"Name": "a", "Capabilities": {"EnabledTaskDrivers": "docker"}}, "must be a list"),
    ],
)  # fmt: skip
def test_a_bad_namespace_is_refused_in_nomad_s_words_with_nothing_written(
    client: TestClient, store: EventStore, path: str, body: dict[str, Any], words: str
) -> None:
    assert words in _refused(client, store, "PUT", path, 400, json=body)


def test_every_problem_of_a_namespace_in_one_refusal(client: TestClient, store: EventStore) -> None:
    text = _refused(
        client, store, "PUT", "/v1/namespace", 400,
        json={"Name": "no/pe", "Description": "x" * 300, "Quota": "q", "VaultConfiguration": {}},
    )  # fmt: skip
    assert text.splitlines() == [
        'Invalid namespace "no/pe":',
        'invalid name "no/pe". Must match regex ^[a-zA-Z0-9-]{1,128}$',
        "description longer than 256",
        "invalid vault configuration: Multi-Cluster Vault is unlicensed.",
        'namespace "no/pe" using non-existent quota "q"',
    ]


def _namespace_of(client: TestClient, job_id: str) -> list[str]:
    return [
        n
        for n in ("default", "prod", "dev")
        if client.get(f"/v1/job/{job_id}", params={"namespace": n}).status_code == 200
    ]


def test_a_register_s_namespace_is_the_query_s_then_the_request_s_then_the_job_s(
    client: TestClient, store: EventStore
) -> None:
    _put_namespace(client, "prod")
    _put_namespace(client, "dev")
    # ?namespace= over the job's own.
    r = client.put("/v1/jobs", params={"namespace": "prod"}, json=_job("a", namespace="dev"))
    assert r.status_code == 200, r.text
    assert _namespace_of(client, "a") == ["prod"]
    # The request's Namespace over the job's.
    client.put("/v1/jobs", json={**_job("b", namespace="prod"), "Namespace": "dev"})
    assert _namespace_of(client, "b") == ["dev"]
    # ?namespace= over the request's too, on /v1/job/:id as well.
    client.post(
        "/v1/job/c", params={"namespace": "prod"}, json={**_job("c", namespace="dev"), "Namespace": "dev"}
    )
    assert _namespace_of(client, "c") == ["prod"]
    # The job's own, else default.
    client.put("/v1/jobs", json=_job("d", namespace="dev"))
    client.put("/v1/jobs", json=_job("e"))
    assert (_namespace_of(client, "d"), _namespace_of(client, "e")) == (["dev"], ["default"])
    # Its eval is in its namespace.
    (evaluation,) = client.get("/v1/job/a/evaluations", params={"namespace": "prod"}).json()
    assert evaluation["Namespace"] == "prod"
    # The dry-run plan goes by the same rule.
    r = client.put("/v1/job/a/plan", params={"namespace": "prod"}, json=_job("a", namespace="dev"))
    assert r.status_code == 200 and r.json()["JobModifyIndex"] > 0


def test_a_job_into_an_unknown_namespace_is_refused_with_nothing_written(
    client: TestClient, store: EventStore
) -> None:
    words = 'job "web" is in nonexistent namespace "nope"'
    assert words in _refused(
        client, store, "PUT", "/v1/jobs", 400, params={"namespace": "nope"}, json=_job("web")
    )
    assert words in _refused(client, store, "PUT", "/v1/jobs", 400, json=_job("web", namespace="nope"))
    assert words in _refused(client, store, "PUT", "/v1/jobs", 400, json={**_job("web"), "Namespace": "nope"})
    # `*` names no namespace to register into.
    text = _refused(client, store, "PUT", "/v1/jobs", 400, params={"namespace": "*"}, json=_job("web"))
    assert 'nonexistent namespace "*"' in text
    # With the job's own problems, in one refusal.
    bad = _job("web", namespace="nope", Priority=1000)
    text = _refused(client, store, "PUT", "/v1/jobs", 400, json=bad)
    assert words in text and "priority" in text.lower()
    assert words in _refused(
        client, store, "PUT", "/v1/job/web/plan", 400, json=_job("web", namespace="nope")
    )
    r = client.post("/v1/validate/job", json=_job("web", namespace="nope"))
    assert r.status_code == 200 and r.json()["ValidationErrors"] == [words]
    assert client.get("/v1/jobs", params={"namespace": "*"}).json() == []


def test_the_namespace_s_capabilities_are_enforced_at_register(client: TestClient, store: EventStore) -> None:
    _put_namespace(
        client, "locked", Capabilities={"DisabledTaskDrivers": ["mock"], "DisabledNetworkModes": ["host"]}
    )
    _put_namespace(client, "docker-only", Capabilities={"EnabledTaskDrivers": ["docker"]})
    text = _refused(client, store, "PUT", "/v1/jobs", 400, params={"namespace": "locked"}, json=_job("web"))
    assert 'used task driver "mock" is not allowed in namespace "locked"' in text
    two = _job("web")
    group = two["Job"]["TaskGroups"][0]
    group["Tasks"].append({"Name": "side", "Driver": "raw_exec", "Config": {"command": "/bin/true"}})
    text = _refused(client, store, "PUT", "/v1/jobs", 400, params={"namespace": "docker-only"}, json=two)
    assert 'used task drivers ["mock" "raw_exec"] are not allowed in namespace "docker-only"' in text
    group["Tasks"].pop()
    group["Networks"] = [{"Mode": "host"}]
    text = _refused(client, store, "PUT", "/v1/jobs", 400, params={"namespace": "locked"}, json=two)
    assert 'used group network mode "host" is not allowed in namespace "locked"' in text
    r = client.post("/v1/validate/job", json=_job("web", namespace="docker-only"))
    assert r.json()["ValidationErrors"] == [
        'used task driver "mock" is not allowed in namespace "docker-only"'
    ]
    # Allowed where the namespace allows it.
    _put_namespace(client, "open", Capabilities={"EnabledTaskDrivers": ["mock"]})
    assert client.put("/v1/jobs", params={"namespace": "open"}, json=_job("web")).status_code == 200


def test_every_list_reads_one_namespace_or_all_of_them(client: TestClient, store: EventStore) -> None:
    _put_namespace(client, "prod")
    for i in range(2):
        client.put("/v1/drover/node/register", json={"Node": node_json(f"n{i}")})
    # One job ID in two namespaces, and one of each's own.
    for namespace, job_ids in (("default", ("api", "web")), ("prod", ("web", "zz"))):
        for job_id in job_ids:
            body = job_json(job_id, 1)  # rolling: a deployment
            r = client.put("/v1/jobs", params={"namespace": namespace}, json=body)
            assert r.status_code == 200, r.text
            _commit_plan(store, r.json()["EvalID"])
    for namespace, path in (("default", "app/a"), ("prod", "app/b")):
        client.put(f"/v1/var/{path}", params={"namespace": namespace}, json={"Items": {"k": "v"}})

    def listed(path: str, namespace: str | None, key: str = "ID") -> list[tuple[str, str]]:
        params = {} if namespace is None else {"namespace": namespace}
        r = client.get(path, params=params)
        assert r.status_code == 200, r.text
        return sorted((x["Namespace"], x[key]) for x in r.json())

    jobs = [("default", "api"), ("default", "web"), ("prod", "web"), ("prod", "zz")]
    assert listed("/v1/jobs", None) == jobs[:2] == listed("/v1/jobs", "default")
    assert listed("/v1/jobs", "prod") == jobs[2:]
    assert listed("/v1/jobs", "*") == jobs
    # In Nomad's order (namespace, then ID), a page at a time with `<namespace>.<id>` tokens.
    pages, token = [], ""
    while True:
        r = client.get("/v1/jobs", params={"namespace": "*", "per_page": 3, "next_token": token})
        pages.append([(j["Namespace"], j["ID"]) for j in r.json()])
        token = r.headers.get("X-Nomad-NextToken", "")
        if not token:
            break
        assert token == "prod.zz"
    assert pages == [jobs[:3], jobs[3:]]
    for path in ("/v1/allocations", "/v1/evaluations", "/v1/deployments"):
        every = listed(path, "*")
        assert {ns for ns, _ in every} == {"default", "prod"} and len(every) >= 4, path
        assert listed(path, None) == [x for x in every if x[0] == "default"], path
        assert listed(path, "prod") == [x for x in every if x[0] == "prod"], path
        assert listed(path, "nope") == [], path
    assert listed("/v1/vars", None, "Path") == [("default", "app/a")]
    assert listed("/v1/vars", "*", "Path") == [("default", "app/a"), ("prod", "app/b")]
    assert client.get("/v1/evaluations/count", params={"namespace": "*"}).json()["Count"] == len(
        listed("/v1/evaluations", "*")
    )
    # Scaling policies: a group's scaling block in each namespace.
    for namespace in ("default", "prod"):
        body = _job("scaled")
        body["Job"]["TaskGroups"][0]["Scaling"] = {"Min": 1, "Max": 3, "Enabled": True}
        assert client.put("/v1/jobs", params={"namespace": namespace}, json=body).status_code == 200

    def policies(namespace: str | None) -> list[str]:
        params = {} if namespace is None else {"namespace": namespace}
        return sorted(
            p["Target"]["Namespace"] for p in client.get("/v1/scaling/policies", params=params).json()
        )

    assert (policies(None), policies("prod"), policies("*")) == (["default"], ["prod"], ["default", "prod"])
    # Services: one registered in each namespace, by its alloc's client.
    for namespace in ("default", "prod"):
        (alloc,) = client.get("/v1/job/web/allocations", params={"namespace": namespace}).json()
        reg = {"ID": f"s-{namespace}", "ServiceName": "web", "Namespace": namespace, "NodeID": alloc["NodeID"],
               "JobID": "web", "AllocID": alloc["ID"], "Address": "10.0.0.1", "Port": 80}  # fmt: skip
        r = client.put("/v1/drover/services", json={"NodeID": alloc["NodeID"], "Services": [reg]})
        assert r.status_code == 200, r.text
    assert [s["Namespace"] for s in client.get("/v1/services").json()] == ["default"]
    assert sorted(s["Namespace"] for s in client.get("/v1/services", params={"namespace": "*"}).json()) == [
        "default", "prod"
    ]  # fmt: skip
    assert [s["ID"] for s in client.get("/v1/service/web", params={"namespace": "prod"}).json()] == ["s-prod"]


def test_reads_are_of_the_request_s_namespace(client: TestClient, store: EventStore) -> None:
    _put_namespace(client, "prod")
    client.put("/v1/drover/node/register", json={"Node": node_json("n0")})
    r = client.put("/v1/jobs", params={"namespace": "prod"}, json=_job("web"))
    _commit_plan(store, r.json()["EvalID"])
    prod = {"namespace": "prod"}
    for path in ("", "/versions", "/allocations", "/evaluations", "/deployments", "/deployment", "/summary",
                 "/scale", "/services"):  # fmt: skip
        assert client.get(f"/v1/job/web{path}").status_code == 404, path
        assert client.get(f"/v1/job/web{path}", params=prod).status_code == 200, path
    assert client.get("/v1/job/web", params=prod).json()["Namespace"] == "prod"
    # Writes to the job too.
    assert client.delete("/v1/job/web").status_code == 404
    r = client.post("/v1/job/web/scale", params=prod, json={"Count": 2, "Target": {"Group": "web"}})
    assert r.status_code == 200, r.text
    assert client.delete("/v1/job/web", params=prod).status_code == 200
    assert client.get("/v1/job/web", params=prod).json()["Stop"] is True


def test_a_namespace_is_deleted_only_when_nothing_live_is_left_in_it(
    client: TestClient, store: EventStore
) -> None:
    assert (
        _refused(client, store, "DELETE", "/v1/namespace/default", 400) == "can not delete default namespace"
    )
    assert _refused(client, store, "DELETE", "/v1/namespace/nope", 404) == "namespace not found"
    _put_namespace(client, "prod")
    client.put("/v1/drover/node/register", json={"Node": node_json("n0")})
    r = client.put("/v1/jobs", params={"namespace": "prod"}, json=_job("web", 2))
    _commit_plan(store, r.json()["EvalID"])
    client.put("/v1/var/app/cfg", params={"namespace": "prod"}, json={"Items": {"k": "v"}})
    text = _refused(client, store, "DELETE", "/v1/namespace/prod", 400)
    assert text.splitlines() == [
        'namespace "prod" has non-terminal jobs in regions: [global]',
        'namespace "prod" has non-terminal allocations in regions: [global]',
        'namespace "prod" has variables associated with it in regions: [global]',
    ]
    client.delete("/v1/var/app/cfg", params={"namespace": "prod"})
    # Purged, the job is gone, but its allocs still run on their client.
    client.delete("/v1/job/web", params={"namespace": "prod", "purge": "true"})
    text = _refused(client, store, "DELETE", "/v1/namespace/prod", 400)
    assert text == 'namespace "prod" has non-terminal allocations in regions: [global]'
    allocs = client.get("/v1/allocations", params={"namespace": "prod"}).json()
    store.append([
        AllocsClientUpdated(node_id="n0", updates=[AllocClientUpdate(id=a["ID"], client_status="complete") for a in allocs])
    ])  # fmt: skip
    r = client.delete("/v1/namespace/prod")
    assert r.status_code == 200 and r.json() is None
    assert int(r.headers["X-Nomad-Index"]) == store.last_position()
    assert client.get("/v1/namespace/prod").status_code == 404
    assert [n["Name"] for n in client.get("/v1/namespaces").json()] == ["default"]
    # Gone, it takes no more jobs; created again, it does.
    assert "nonexistent namespace" in _refused(
        client, store, "PUT", "/v1/jobs", 400, params={"namespace": "prod"}, json=_job("web")
    )
    _put_namespace(client, "prod")
    assert client.put("/v1/jobs", params={"namespace": "prod"}, json=_job("web")).status_code == 200


def _blocked(
    client: TestClient, path: str, index: int, out: dict[str, Any], **params: str
) -> threading.Thread:
    def read() -> None:
        t0 = time.monotonic()
        r = client.get(path, params={"index": index, "wait": "20s", **params})
        out.update(
            status=r.status_code,
            index=int(r.headers["X-Nomad-Index"]),
            took=time.monotonic() - t0,
            body=r.json(),
        )

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


def test_blocking_queries_wait_on_their_namespace(client: TestClient, store: EventStore) -> None:
    _put_namespace(client, "prod")
    index = store.last_position()
    # The catalogue: a list and one namespace, woken by its write.
    listed: dict[str, Any] = {}
    one: dict[str, Any] = {}
    threads = [
        _blocked(client, "/v1/namespaces", index, listed),
        _blocked(client, "/v1/namespace/dev", index, one),
    ]
    time.sleep(0.5)
    assert not listed and not one
    written = _put_namespace(client, "dev")
    for t in threads:
        t.join(timeout=10)
    assert listed["index"] >= written and [n["Name"] for n in listed["body"]] == ["default", "dev", "prod"]
    assert one["status"] == 200 and one["body"]["CreateIndex"] == written and one["took"] < 5
    # A list of prod's jobs sleeps through a register in default, and wakes on one in prod.
    index = store.last_position()
    jobs: dict[str, Any] = {}
    t = _blocked(client, "/v1/jobs", index, jobs, namespace="prod")
    time.sleep(0.5)
    client.put("/v1/jobs", json=_job("elsewhere"))
    time.sleep(1.0)
    assert not jobs  # still waiting: nothing in prod changed
    client.put("/v1/jobs", params={"namespace": "prod"}, json=_job("here"))
    t.join(timeout=10)
    assert jobs["status"] == 200 and [j["ID"] for j in jobs["body"]] == ["here"]
    assert jobs["index"] == store.last_position()
    # `*` wakes on any namespace's.
    index = store.last_position()
    every: dict[str, Any] = {}
    t = _blocked(client, "/v1/jobs", index, every, namespace="*")
    time.sleep(0.5)
    client.put("/v1/jobs", json=_job("third"))
    t.join(timeout=10)
    assert every["took"] < 5 and sorted(j["ID"] for j in every["body"]) == ["elsewhere", "here", "third"]
