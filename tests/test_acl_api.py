"""ACLs through the HTTP API in-process, against a real PostgreSQL: the bootstrap once (and again
through the reset file), policies and tokens written, read and deleted in Nomad's JSON, the
anonymous policy, an expired or unknown token refused, a refusal that writes nothing, the
namespace a check is made in (the query's, the job's in the body, the object's), lists showing
a token only what it may read, and ACLs off by default."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.model import Allocation, Node
from drover.model.events import NodeRegistered, PlanApplied
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore

from .cluster import NODE_SECRET, node_json

DENIED = (403, "Permission denied")


def settings(database_url: str, tmp_path: Path, **kw: Any) -> Settings:
    return Settings(
        database_url=database_url,
        nats_url="nats://unused",
        data_dir=str(tmp_path),
        keyring=str(tmp_path / "keyring.json"),
        **{"acl_enabled": True, "acl_token_min_expiration_ttl": 0.0, **kw},
    )


@pytest.fixture
def client(database_url: str, tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings(database_url, tmp_path), EventStore(database_url))) as c:
        yield c


@pytest.fixture
def root(client: TestClient) -> dict[str, str]:
    """The headers of the bootstrap's management token."""
    r = client.post("/v1/acl/bootstrap")
    assert r.status_code == 200, r.text
    return {"X-Nomad-Token": r.json()["SecretID"]}


def token_for(
    client: TestClient, root: dict[str, str], rules: str, name: str = "p", **token: Any
) -> dict[str, Any]:
    """A client token holding one new policy of `rules`."""
    assert (
        client.put(f"/v1/acl/policy/{name}", json={"Name": name, "Rules": rules}, headers=root).status_code
        == 200
    )
    r = client.post(
        "/v1/acl/token", json={"Name": name, "Type": "client", "Policies": [name], **token}, headers=root
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def as_(token: dict[str, Any]) -> dict[str, str]:
    return {"X-Nomad-Token": token["SecretID"]}


def answer(r: Any) -> tuple[int, str]:
    return r.status_code, r.text


def job(job_id: str, namespace: str = "default") -> dict[str, Any]:
    return {"Job": {"ID": job_id, "Namespace": namespace, "Datacenters": ["dc1"],
                    "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]}}  # fmt: skip


def test_the_bootstrap_runs_once_and_again_only_through_the_reset_file(
    client: TestClient, store: EventStore, tmp_path: Path
) -> None:
    r = client.post("/v1/acl/bootstrap")
    assert r.status_code == 200, r.text
    first = r.json()
    assert (first["Name"], first["Type"], first["Global"], first["Policies"]) == (
        "Bootstrap Token",
        "management",
        True,
        [],
    )
    assert (
        uuid.UUID(first["SecretID"])
        and uuid.UUID(first["AccessorID"])
        and first["SecretID"] != first["AccessorID"]
    )
    index = int(r.headers["X-Nomad-Index"])
    assert first["CreateIndex"] == first["ModifyIndex"] == index == store.last_position()
    assert (
        first["ExpirationTime"] is None and first["ExpirationTTL"] == "" and first["CreateTime"].endswith("Z")
    )
    # Again: refused with the index a reset file must hold, nothing written.
    assert answer(client.post("/v1/acl/bootstrap")) == (
        400,
        f"ACL bootstrap already done (reset index: {index})",
    )
    reset = tmp_path / "acl-bootstrap-reset"
    reset.write_text(f"{index + 7}\n")
    assert answer(client.post("/v1/acl/bootstrap")) == (
        400, f"Invalid bootstrap reset index (specified {index + 7}, reset index: {index})"
    )  # fmt: skip
    assert store.last_position() == index
    # The operator's chosen secret must be a UUID.
    r = client.post("/v1/acl/bootstrap", json={"BootstrapSecret": "not-a-uuid"})
    assert answer(r) == (400, "invalid acl token")
    reset.write_text(str(index))
    chosen = str(uuid.uuid4())
    r = client.post("/v1/acl/bootstrap", json={"BootstrapSecret": chosen})
    assert r.status_code == 200, r.text
    second = r.json()
    assert second["SecretID"] == chosen and second["AccessorID"] != first["AccessorID"]
    # The reset moved the index on: the same file allows no third.
    again = int(r.headers["X-Nomad-Index"])
    assert answer(client.post("/v1/acl/bootstrap")) == (
        400, f"Invalid bootstrap reset index (specified {index}, reset index: {again})"
    )  # fmt: skip
    # Old tokens are not revoked (as Nomad's).
    for secret in (first["SecretID"], chosen):
        assert client.get("/v1/acl/token/self", headers={"X-Nomad-Token": secret}).status_code == 200


def test_policies_are_written_read_listed_and_deleted(
    client: TestClient, root: dict[str, str], store: EventStore
) -> None:
    rules = 'namespace "default" {\n  policy = "read"\n}\nnode { policy = "read" }'
    r = client.put("/v1/acl/policy/readonly", json={"Name": "readonly", "Description": "reads", "Rules": rules},
                   headers=root)  # fmt: skip
    assert r.status_code == 200 and r.content == b""
    index = int(r.headers["X-Nomad-Index"])
    assert index == store.last_position()
    got = client.get("/v1/acl/policy/readonly", headers=root).json()
    assert (got["Name"], got["Description"], got["Rules"], got["CreateIndex"], got["ModifyIndex"]) == (
        "readonly", "reads", rules, index, index
    )  # fmt: skip
    assert got["RulesJSON"]["Namespaces"][0]["Capabilities"][:3] == ["list-jobs", "parse-job", "read-job"]
    assert got["RulesJSON"]["Node"] == {"Policy": "read"} and got["Hash"]
    # Written again: a new ModifyIndex, the CreateIndex kept.
    client.post("/v1/acl/policy/readonly", json={"Name": "readonly", "Rules": rules}, headers=root)
    again = client.get("/v1/acl/policy/readonly", headers=root).json()
    assert again["CreateIndex"] == index < again["ModifyIndex"] and again["Description"] == ""
    client.put("/v1/acl/policy/other", json={"Name": "other", "Rules": ""}, headers=root)
    listed = client.get("/v1/acl/policies", headers=root).json()
    assert [p["Name"] for p in listed] == ["other", "readonly"] and "Rules" not in listed[0]
    assert [
        p["Name"] for p in client.get("/v1/acl/policies", params={"prefix": "re"}, headers=root).json()
    ] == ["readonly"]
    # Refusals: the body's name, the rules (every problem), nothing written.
    before = store.last_position()
    r = client.put("/v1/acl/policy/x", json={"Name": "y", "Rules": ""}, headers=root)
    assert answer(r) == (400, "ACL policy name does not match request path")
    r = client.put(
        "/v1/acl/policy/x", json={"Name": "x", "Rules": 'node { policy = "root" }\nbogus = 1'}, headers=root
    )
    assert r.status_code == 400
    assert r.text.splitlines() == [
        'failed to parse rules: Invalid node policy "root" (line 1)',
        "failed to parse rules: Invalid or duplicate policy keys: bogus",
    ]
    r = client.put("/v1/acl/policy/x", json={"Name": "x", "Rules": 7}, headers=root)
    assert r.status_code == 400 and "Rules" in r.text
    assert store.last_position() == before
    r = client.delete("/v1/acl/policy/readonly", headers=root)
    assert r.status_code == 200 and int(r.headers["X-Nomad-Index"]) == before + 1
    assert answer(client.get("/v1/acl/policy/readonly", headers=root)) == (404, "ACL policy not found")
    # A policy that is not there is gone already: nothing to write.
    assert client.delete("/v1/acl/policy/readonly", headers=root).status_code == 200
    assert store.last_position() == before + 1


def test_tokens_are_created_read_updated_listed_and_deleted(
    client: TestClient, root: dict[str, str], store: EventStore
) -> None:
    r = client.post("/v1/acl/token", json={"Name": "ci", "Type": "client", "Policies": ["readonly", "missing"]},
                    headers=root)  # fmt: skip
    assert r.status_code == 200, r.text
    ci = r.json()
    assert (ci["Name"], ci["Type"], ci["Policies"], ci["Global"]) == (
        "ci",
        "client",
        ["readonly", "missing"],
        False,
    )
    assert ci["CreateIndex"] == ci["ModifyIndex"] == int(r.headers["X-Nomad-Index"])
    # Read by a manager or by itself, with its secret; by another token, refused.
    by_root = client.get(f"/v1/acl/token/{ci['AccessorID']}", headers=root).json()
    assert by_root == ci
    assert client.get(f"/v1/acl/token/{ci['AccessorID']}", headers=as_(ci)).json() == ci
    assert client.get("/v1/acl/token/self", headers=as_(ci)).json() == ci
    other = client.post("/v1/acl/token", json={"Type": "client", "Policies": ["x"]}, headers=root).json()
    assert answer(client.get(f"/v1/acl/token/{ci['AccessorID']}", headers=as_(other))) == DENIED
    assert answer(client.get(f"/v1/acl/token/{uuid.uuid4()}", headers=root)) == (404, "ACL token not found")
    # Listed without secrets.
    listed = client.get("/v1/acl/tokens", headers=root).json()
    assert {t["AccessorID"] for t in listed} >= {ci["AccessorID"], other["AccessorID"]}
    assert all("SecretID" not in t and "ExpirationTTL" not in t for t in listed)
    page = client.get("/v1/acl/tokens", params={"per_page": 1}, headers=root)
    assert len(page.json()) == 1 and page.headers["X-Nomad-NextToken"]
    # An update keeps the secret and the creation; the body must name the path's token.
    r = client.post(f"/v1/acl/token/{ci['AccessorID']}",
                    json={"AccessorID": ci["AccessorID"], "Name": "ci-2", "Type": "client", "Policies": ["p2"]},
                    headers=root)  # fmt: skip
    assert r.status_code == 200, r.text
    updated = r.json()
    assert (updated["SecretID"], updated["CreateTime"], updated["CreateIndex"]) == (
        ci["SecretID"],
        ci["CreateTime"],
        ci["CreateIndex"],
    )
    assert updated["Name"] == "ci-2" and updated["ModifyIndex"] > ci["ModifyIndex"]
    r = client.post(
        f"/v1/acl/token/{ci['AccessorID']}", json={"AccessorID": "x", "Type": "client"}, headers=root
    )
    assert answer(r) == (400, "ACL token accessor does not match request path")
    before = store.last_position()
    r = client.post("/v1/acl/token", json={"Type": "client", "Global": True, "Name": "n" * 300}, headers=root)
    assert r.status_code == 400 and r.text.splitlines() == [
        "token name too long",
        "client token missing policies or roles",
    ]
    r = client.post("/v1/acl/token", json={"Type": "management", "ExpirationTTL": "25h"}, headers=root)
    assert r.status_code == 400 and "cannot be more than 24h0m0s in the future (was 25h0m0s)" in r.text
    assert store.last_position() == before
    # Deleted: gone, and its secret no longer lets anything through.
    r = client.delete(f"/v1/acl/token/{ci['AccessorID']}", headers=root)
    assert r.status_code == 200 and int(r.headers["X-Nomad-Index"]) == before + 1
    assert answer(client.get("/v1/acl/token/self", headers=as_(ci))) == DENIED
    r = client.delete(f"/v1/acl/token/{ci['AccessorID']}", headers=root)
    assert answer(r) == (400, f"Cannot delete nonexistent tokens: {ci['AccessorID']}")


def test_a_token_with_a_ttl_expires_and_is_then_refused_not_taken_as_anonymous(
    client: TestClient, root: dict[str, str]
) -> None:
    client.put("/v1/acl/policy/anonymous", json={"Name": "anonymous", "Rules": 'namespace "default" { policy = "read" }'},
               headers=root)  # fmt: skip
    short = token_for(client, root, 'namespace "default" { policy = "read" }', ExpirationTTL="1s")
    assert short["ExpirationTTL"] == "1s"
    created = short["CreateTime"]
    assert short["ExpirationTime"] > created
    assert client.get("/v1/jobs", headers=as_(short)).status_code == 200
    time.sleep(1.2)
    assert answer(client.get("/v1/jobs", headers=as_(short))) == DENIED
    assert answer(client.get("/v1/acl/token/self", headers=as_(short))) == DENIED
    # The same read without a token is the anonymous policy's.
    assert client.get("/v1/jobs").status_code == 200


def test_no_token_is_the_anonymous_policy_and_a_bad_token_is_refused(
    client: TestClient, root: dict[str, str]
) -> None:
    assert answer(client.get("/v1/jobs")) == DENIED
    anonymous = client.get("/v1/acl/token/self").json()
    assert (anonymous["AccessorID"], anonymous["Policies"]) == ("anonymous", ["anonymous"])
    client.put("/v1/acl/policy/anonymous", json={"Name": "anonymous", "Rules": 'namespace "default" { policy = "read" }'},
               headers=root)  # fmt: skip
    assert client.get("/v1/jobs").status_code == 200
    assert answer(client.put("/v1/jobs", json=job("web"))) == DENIED
    # The anonymous policy is readable by anyone; others only with the token holding them.
    assert client.get("/v1/acl/policy/anonymous").status_code == 200
    assert [p["Name"] for p in client.get("/v1/acl/policies").json()] == ["anonymous"]
    # Unknown, malformed, and another scheme's tokens: refused, never anonymous.
    for headers in ({"X-Nomad-Token": str(uuid.uuid4())}, {"X-Nomad-Token": "not-a-uuid"},
                    {"Authorization": f"Bearer {uuid.uuid4()}"}):  # fmt: skip
        assert answer(client.get("/v1/jobs", headers=headers)) == DENIED
    # The bearer form is a token too; a Basic one is none at all.
    assert (
        client.get("/v1/acl/tokens", headers={"Authorization": f"Bearer {root['X-Nomad-Token']}"}).status_code
        == 200
    )
    assert answer(client.get("/v1/acl/tokens", headers={"Authorization": "Basic Zm9vOmJhcg=="})) == DENIED
    assert (
        client.get("/v1/acl/tokens", headers={"X-Nomad-Token": f"  {root['X-Nomad-Token']} "}).status_code
        == 200
    )


def test_a_refusal_writes_nothing(client: TestClient, root: dict[str, str], store: EventStore) -> None:
    reader = token_for(client, root, 'namespace "*" { policy = "read" }\nnode { policy = "read" }')
    before = store.last_position()
    for method, path, body in [
        ("PUT", "/v1/jobs", job("web")),
        ("POST", "/v1/job/web", job("web")),
        ("DELETE", "/v1/job/web", None),
        ("PUT", "/v1/node/n1/drain", {"DrainSpec": {"Deadline": 0}}),
        ("PUT", "/v1/system/gc", None),
        ("PUT", "/v1/acl/policy/x", {"Name": "x", "Rules": ""}),
        ("POST", "/v1/acl/token", {"Type": "management"}),
        ("PUT", "/v1/var/app/x", {"Items": {"a": "b"}}),
        ("PUT", "/v1/drover/node/register", {"Node": {"ID": "n1"}}),
        ("PUT", "/v1/operator/keyring/rotate", None),
    ]:
        r = client.request(method, path, json=body, headers=as_(reader))
        assert answer(r) == DENIED, (method, path)
    assert store.last_position() == before
    # Reads it holds pass.
    assert client.get("/v1/jobs", headers=as_(reader)).status_code == 200
    assert client.get("/v1/nodes", headers=as_(reader)).status_code == 200
    assert answer(client.get("/v1/operator/keyring/keys", headers=as_(reader))) == DENIED


def test_the_namespace_checked_is_the_jobs_in_the_body_and_the_objects_named(
    client: TestClient, root: dict[str, str], store: EventStore
) -> None:
    prod = token_for(
        client, root, 'namespace "prod-*" { policy = "write" }\nnamespace "prod-secret" { policy = "deny" }'
    )
    for ns in ("prod-web", "prod-secret"):
        assert client.put(f"/v1/namespace/{ns}", json={"Name": ns}, headers=root).status_code == 200
    r = client.put("/v1/jobs", json=job("web", "prod-web"), headers=as_(prod))
    assert r.status_code == 200, r.text
    # Checked where the handler registers the job: ?namespace= first, then the job's own.
    assert answer(client.put("/v1/jobs", json=job("web"), headers=as_(prod))) == DENIED
    r = client.put("/v1/jobs", params={"namespace": "prod-web"}, json=job("web"), headers=as_(prod))
    assert r.status_code == 200, r.text
    r = client.put(
        "/v1/jobs", params={"namespace": "default"}, json=job("web", "prod-web"), headers=as_(prod)
    )
    assert answer(r) == DENIED
    unnamed = job("web")
    del unnamed["Job"]["Namespace"]
    assert answer(client.put("/v1/jobs", json=unnamed, headers=as_(prod))) == DENIED
    r = client.put("/v1/jobs", params={"namespace": "prod-web"}, json=unnamed, headers=as_(prod))
    assert r.status_code == 200, r.text
    assert answer(client.put("/v1/jobs", json=job("web", "prod-secret"), headers=as_(prod))) == DENIED
    assert client.get("/v1/job/web", params={"namespace": "prod-web"}, headers=as_(prod)).status_code == 200
    assert answer(client.get("/v1/job/web", headers=as_(prod))) == DENIED
    # An alloc (eval, deployment) is checked in its own namespace, whatever the query says.
    store.append([NodeRegistered(node=Node(id="n1")),
                  PlanApplied(eval_id="e1", job_id="web", namespace="prod-web",
                              allocs=[Allocation(id="a-prod", namespace="prod-web", job_id="web", task_group="g",
                                                 node_id="n1", eval_id="e1")]),
                  PlanApplied(eval_id="e2", job_id="web",
                              allocs=[Allocation(id="a-default", job_id="web", task_group="g", node_id="n1",
                                                 eval_id="e2")])])  # fmt: skip
    assert client.get("/v1/allocation/a-prod", headers=as_(prod)).status_code == 200
    assert answer(client.get("/v1/allocation/a-default", headers=as_(prod))) == DENIED
    assert (
        answer(client.get("/v1/allocation/a-default", params={"namespace": "prod-web"}, headers=as_(prod)))
        == DENIED
    )
    # A list keeps what the token may read.
    assert [
        a["ID"] for a in client.get("/v1/allocations", params={"namespace": "*"}, headers=as_(prod)).json()
    ] == ["a-prod"]
    all_ns = {"namespace": "*"}
    assert {a["ID"] for a in client.get("/v1/allocations", params=all_ns, headers=root).json()} == {
        "a-prod",
        "a-default",
    }


def test_variables_by_path_rule(client: TestClient, root: dict[str, str]) -> None:
    for ns, path in (("default", "app/db"), ("default", "other/x"), ("prod", "app/db")):
        client.put(f"/v1/var/{path}", params={"namespace": ns}, json={"Items": {"k": "v"}}, headers=root)
    apps = token_for(
        client, root, 'namespace "default" {\n variables {\n  path "app/*" { capabilities = ["read"] }\n }\n}'
    )
    assert client.get("/v1/var/app/db", headers=as_(apps)).json()["Items"] == {"k": "v"}
    assert answer(client.get("/v1/var/other/x", headers=as_(apps))) == DENIED
    assert answer(client.get("/v1/var/app/db", params={"namespace": "prod"}, headers=as_(apps))) == DENIED
    assert answer(client.put("/v1/var/app/db", json={"Items": {"k": "w"}}, headers=as_(apps))) == DENIED
    listed = client.get("/v1/vars", params={"namespace": "*"}, headers=as_(apps)).json()
    assert [(v["Namespace"], v["Path"]) for v in listed] == [("default", "app/db")]


def test_node_agent_and_management_rules(client: TestClient, root: dict[str, str]) -> None:
    nodes = token_for(client, root, 'node { policy = "write" }')
    register = {"Node": node_json("n1")}
    assert client.put("/v1/drover/node/register", json=register, headers=as_(nodes)).status_code == 200
    assert client.get("/v1/node/n1", headers=as_(nodes)).status_code == 200
    assert answer(client.get("/v1/jobs", headers=as_(nodes))) == DENIED
    assert answer(client.get("/v1/acl/tokens", headers=as_(nodes))) == DENIED
    assert answer(client.put("/v1/system/gc", headers=as_(nodes))) == DENIED
    # Open routes take no token at all, not even a bad one.
    assert client.get("/v1/status/leader", headers={"X-Nomad-Token": "nonsense"}).status_code == 200


def test_a_node_registers_with_a_node_write_token_and_its_secret_reads_what_its_agent_reads(
    client: TestClient, root: dict[str, str], store: EventStore
) -> None:
    """Nomad's node introduction: registering takes an ACL token with node:write (the node's
    own secret only once it is registered); the node's secret is then its client's identity:
    its own client calls, and the reads of an agent (its allocs, their jobs, the variables and
    services its templates watch), nothing more."""
    node = {"X-Nomad-Token": NODE_SECRET}
    before = store.last_position()
    assert (
        answer(client.put("/v1/drover/node/register", json={"Node": node_json("n1")}, headers=node)) == DENIED
    )
    assert answer(client.put("/v1/drover/node/register", json={"Node": node_json("n1")})) == DENIED
    assert store.last_position() == before
    nodes = token_for(client, root, 'node { policy = "write" }')
    assert (
        client.put("/v1/drover/node/register", json={"Node": node_json("n1")}, headers=as_(nodes)).status_code
        == 200
    )
    assert (
        client.put("/v1/drover/node/register", json={"Node": node_json("n1")}, headers=node).status_code
        == 200
    )
    assert client.put("/v1/jobs", json=job("web"), headers=root).status_code == 200
    client.put("/v1/var/app/db", json={"Items": {"k": "v"}}, headers=root)
    for path, params in (("/v1/node/n1/allocations", {}), ("/v1/job/web/versions", {}), ("/v1/var/app/db", {}),
                         ("/v1/vars", {"prefix": "app"}), ("/v1/services", {}), ("/v1/service/web", {})):  # fmt: skip
        r = client.get(path, params=params, headers=node)
        assert r.status_code == 200, (path, r.text)
    assert client.get("/v1/vars", params={"prefix": "app"}, headers=node).json()[0]["Path"] == "app/db"
    before = store.last_position()
    for method, path in (("PUT", "/v1/jobs"), ("PUT", "/v1/var/app/db"), ("GET", "/v1/acl/tokens"),
                         ("PUT", "/v1/system/gc"), ("DELETE", "/v1/job/web")):  # fmt: skip
        body = job("web") if path == "/v1/jobs" else {"Items": {"k": "x"}} if "var" in path else None
        assert answer(client.request(method, path, json=body, headers=node)) == DENIED, (method, path)
    assert store.last_position() == before
    # A secret no node registered with is no one: refused, never anonymous.
    other = {"X-Nomad-Token": str(uuid.uuid4())}
    assert answer(client.get("/v1/node/n1/allocations", headers=other)) == DENIED


def test_acls_are_off_by_default(database_url: str, tmp_path: Path) -> None:
    off = Settings(database_url=database_url, nats_url="nats://unused", data_dir=str(tmp_path),
                   keyring=str(tmp_path / "keyring.json"))  # fmt: skip
    assert off.acl_enabled is False
    with TestClient(create_app(off, EventStore(database_url))) as c:
        assert answer(c.post("/v1/acl/bootstrap")) == (400, "ACL support disabled")
        assert answer(c.get("/v1/acl/token/self")) == (400, "ACL support disabled")
        assert c.get("/v1/jobs", headers={"X-Nomad-Token": "whatever"}).status_code == 200
        assert c.put("/v1/jobs", json=job("web")).status_code == 200


def test_reject_job_registration_lets_a_management_token_through(
    client: TestClient, root: dict[str, str], store: EventStore
) -> None:
    """Nomad's registrationsAreAllowed: with RejectJobRegistration set, only a management
    token registers; another token, even one that may submit jobs, is refused."""
    writer = token_for(client, root, 'namespace "default" { policy = "write" }')
    config = {"SchedulerAlgorithm": "binpack", "RejectJobRegistration": True}
    assert (
        client.put("/v1/operator/scheduler/configuration", json=config, headers=as_(writer)).status_code
        == 403
    )
    assert client.put("/v1/operator/scheduler/configuration", json=config, headers=root).status_code == 200
    before = store.last_position()
    r = client.put("/v1/jobs", json=job("web"), headers=as_(writer))
    assert answer(r) == (
        403,
        "Job registration, dispatch, and scale are disabled by the scheduler configuration",
    )
    assert store.last_position() == before
    assert client.put("/v1/jobs", json=job("web"), headers=root).status_code == 200
