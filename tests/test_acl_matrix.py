"""Every route of the API with ACLs on, asked by five callers: anonymous (no anonymous policy),
a read-only token, a write token for another namespace, a node-write token and a management
token. Each gets Nomad's answer: 403 `Permission denied` where Nomad's endpoint refuses it (and
the log is left as it was), anything else where Nomad lets it through (the handler's 200, 400 or
404). Who passes is written out below from Nomad's own checks (nomad/*_endpoint.go,
command/agent/*_endpoint.go), not read from Drover's route table."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.routing import Route

from drover.api.app import create_app
from drover.model import Allocation, Deployment
from drover.model.events import PlanApplied
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore

from .cluster import job_json, node_json

ANON, READER, OTHER, NODES, ROOT = "anonymous", "read", "other-write", "node-write", "management"
CALLERS = (ANON, READER, OTHER, NODES, ROOT)

READ_RULES = """
namespace "default" { policy = "read" }
node { policy = "read" }
agent { policy = "read" }
operator { policy = "read" }
node_pool "*" { policy = "read" }
"""
OTHER_RULES = 'namespace "other" { policy = "write" }'
NODE_RULES = 'node { policy = "write" }'

# Who passes, by Nomad's rules (acl/policy.go's expansions: a namespace "read" policy grants
# list-jobs, parse-job, read-job, the scaling reads; "write" adds submit-job, dispatch-job,
# read-logs, read-fs, alloc-lifecycle, scale-job; neither grants variables; node write implies
# node read; operator read grants keyring-read; the anonymous token holds nothing here).
EVERYONE = frozenset(CALLERS)  # no check at all, or any token that resolves (anonymous too)
MANAGEMENT = frozenset({ROOT})
READ_DEFAULT = frozenset({READER, ROOT})  # a namespace capability of the read policy in "default"
WRITE_DEFAULT = frozenset({ROOT})  # one of the write policy's in "default" (the other token's is in "other")
IN_OTHER = frozenset({OTHER, ROOT})  # anything the write policy grants, asked in "other"
ANY_NAMESPACE_LISTS = frozenset({READER, OTHER, ROOT})  # `namespace=*`: some namespace grants it
NODE_READ = frozenset({READER, NODES, ROOT})
NODE_WRITE = frozenset({NODES, ROOT})
AGENT_READ = OPERATOR_READ = POOL_READ = frozenset({READER, ROOT})
AGENT_WRITE = OPERATOR_WRITE = POOL_WRITE = VARIABLES = frozenset({ROOT})
# Nomad's client-only RPCs (AuthenticateClientOnly): a node's own secret, never an ACL token,
# not even a management one.
CLIENT_ONLY: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Case:
    method: str
    route: str  # the route's template, as the app names it
    path: str
    allowed: frozenset[str]
    query: tuple[tuple[str, str], ...] = ()
    body: Any = None
    # A stream that would not end: asked only of the callers refused.
    streams: bool = False


def cases(ids: dict[str, str]) -> list[Case]:
    """Every (method, route) of the app, with real objects' IDs and a body where one is needed;
    reads first, writes next, deletions last, so that what a write changes cannot turn a later
    answer into a refusal."""
    J, job, alloc, ev, dep = (
        "/v1/job/{job_id:path}",
        "/v1/job/web",
        ids["alloc"],
        ids["eval"],
        ids["deployment"],
    )
    node, pool, restart = ids["node"], "pool1", ids["restart"]
    job_body = job_json("web", 1)
    other_job = job_json("api", 1)
    other_job["Job"]["Namespace"] = "other"
    out: list[Case] = []

    def add(methods: str, route: str, allowed: frozenset[str], path: str | None = None, **kw: Any) -> None:
        for method in methods.split("|"):
            out.append(Case(method, route, path or route, allowed, **kw))

    W = "PUT|POST"
    # Open: Nomad's status, regions, health and metrics take no token; the API's documents.
    for route in ("/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"):
        add("GET|HEAD", route, EVERYONE)
    for route in ("/v1/status/leader", "/v1/status/peers", "/v1/regions", "/v1/agent/health", "/v1/metrics"):
        add("GET", route, EVERYONE)
    # Jobs (nomad/job_endpoint.go): reads need read-job (List: list-jobs) in the namespace asked.
    add("GET", "/v1/jobs", READ_DEFAULT)
    add("GET", "/v1/jobs", ANY_NAMESPACE_LISTS, query=(("namespace", "*"),))
    add("GET", "/v1/jobs", IN_OTHER, query=(("namespace", "other"),))
    for tail in ("", "/versions", "/allocations", "/evaluations", "/deployments", "/deployment", "/summary",
                 "/scale", "/services", "/restarts"):  # fmt: skip
        add("GET", J + tail, READ_DEFAULT, job + tail)
    add("GET", J, IN_OTHER, "/v1/job/api", query=(("namespace", "other"),))
    add("GET", f"{J}/restart/{{restart_id}}", READ_DEFAULT, f"{job}/restart/{restart}")
    add("GET", "/v1/scaling/policies", READ_DEFAULT)
    add("GET", "/v1/scaling/policy/{policy_id}", READ_DEFAULT, f"/v1/scaling/policy/{ids['scaling']}")
    # Services (nomad/service_registration_endpoint.go): read-job.
    add("GET", "/v1/services", READ_DEFAULT)
    add("GET", "/v1/service/{name}", READ_DEFAULT, "/v1/service/web")
    # Allocs, evals, deployments: checked in the object's own namespace, whatever the query says.
    for route in ("/v1/allocation/{alloc_id}", "/v1/allocation/{alloc_id}/services",
                  "/v1/client/allocation/{alloc_id}/checks", "/v1/client/allocation/{alloc_id}/stats"):  # fmt: skip
        add("GET", route, READ_DEFAULT, route.replace("{alloc_id}", alloc))
    add("GET", "/v1/allocation/{alloc_id}", IN_OTHER, f"/v1/allocation/{ids['other_alloc']}")
    add("GET", "/v1/allocation/{alloc_id}", IN_OTHER, f"/v1/allocation/{ids['other_alloc']}",
        query=(("namespace", "default"),))  # fmt: skip
    add("GET", "/v1/allocations", READ_DEFAULT)
    # Logs (ClientFS): read-logs or read-fs, the write policy's; a bad query ends them at once.
    add("GET", "/v1/client/fs/logs/{alloc_id}", WRITE_DEFAULT, f"/v1/client/fs/logs/{alloc}",
        query=(("type", "bogus"),))  # fmt: skip
    add("GET", "/v1/client/fs/logs/{alloc_id}", IN_OTHER, f"/v1/client/fs/logs/{ids['other_alloc']}",
        query=(("type", "bogus"),))  # fmt: skip
    add("GET", "/v1/evaluations", READ_DEFAULT)
    add("GET", "/v1/evaluations/count", READ_DEFAULT)
    add("GET", "/v1/evaluation/{eval_id}", READ_DEFAULT, f"/v1/evaluation/{ev}")
    add("GET", "/v1/evaluation/{eval_id}/allocations", READ_DEFAULT, f"/v1/evaluation/{ev}/allocations")
    add("GET", "/v1/deployments", READ_DEFAULT)
    add("GET", "/v1/deployment/{deployment_id}", READ_DEFAULT, f"/v1/deployment/{dep}")
    add(
        "GET", "/v1/deployment/allocations/{deployment_id}", READ_DEFAULT, f"/v1/deployment/allocations/{dep}"
    )
    # Nodes (nomad/node_endpoint.go), the agent's members (Status.Members): node read.
    add("GET", "/v1/nodes", NODE_READ)
    add("GET", "/v1/node/{node_id}", NODE_READ, f"/v1/node/{node}")
    add("GET", "/v1/node/{node_id}/allocations", NODE_READ, f"/v1/node/{node}/allocations")
    add("GET", "/v1/agent/members", NODE_READ)
    # The agent (command/agent/agent_endpoint.go) and the operator (nomad/operator_endpoint.go).
    add("GET", "/v1/agent/self", AGENT_READ)
    add("GET", "/v1/agent/servers", AGENT_READ)
    add("GET", "/v1/operator/scheduler/configuration", OPERATOR_READ)
    add("GET", "/v1/operator/raft/configuration", MANAGEMENT)  # RaftGetConfiguration: IsManagement
    add("GET", "/v1/operator/keyring/keys", OPERATOR_READ)  # keyring-read, in operator read
    # Node pools (nomad/node_pool_endpoint.go): listed to anyone, filtered; read by its rule.
    add("GET", "/v1/node/pools", EVERYONE)
    add("GET", "/v1/node/pool/{name}", POOL_READ, f"/v1/node/pool/{pool}")
    add("GET", "/v1/node/pool/{name}/nodes", POOL_READ, f"/v1/node/pool/{pool}/nodes")  # and node read
    add("GET", "/v1/node/pool/{name}/jobs", POOL_READ, f"/v1/node/pool/{pool}/jobs")  # and list-jobs
    # Namespaces (nomad/namespace_endpoint.go): listed to anyone, filtered; read where anything is granted.
    add("GET", "/v1/namespaces", EVERYONE)
    add("GET", "/v1/namespace/{name}", READ_DEFAULT, "/v1/namespace/default")
    add("GET", "/v1/namespace/{name}", IN_OTHER, "/v1/namespace/other")
    # Variables (nomad/variables_endpoint.go): by path rule; no policy here has any.
    add("GET", "/v1/vars", VARIABLES)
    add("GET", "/v1/var/{path:path}", VARIABLES, "/v1/var/app/db")
    # ACL (nomad/acl_endpoint.go): a token reads itself and its own policies; the rest is management's.
    add("GET", "/v1/acl/policies", EVERYONE)
    add("GET", "/v1/acl/policy/{name}", MANAGEMENT, "/v1/acl/policy/victim")
    add("GET", "/v1/acl/policy/{name}", READ_DEFAULT, "/v1/acl/policy/readonly")
    add("GET", "/v1/acl/tokens", MANAGEMENT)
    add("GET", "/v1/acl/token/self", EVERYONE)
    add("GET", "/v1/acl/token/{accessor_id}", MANAGEMENT, f"/v1/acl/token/{ids['victim']}")
    add("GET", "/v1/acl/token/{accessor_id}", READ_DEFAULT, f"/v1/acl/token/{ids['read_accessor']}")
    # The event stream (nomad/event_endpoint.go): a bad query is refused before any topic is;
    # then each topic: Job needs read-job, Node node read, every topic management.
    add("GET", "/v1/event/stream", EVERYONE, query=(("index", "-1"),))
    add("GET", "/v1/event/stream", READ_DEFAULT, query=(("topic", "Job"),), streams=True)
    add("GET", "/v1/event/stream", NODE_READ, query=(("topic", "Node"),), streams=True)
    add("GET", "/v1/event/stream", MANAGEMENT, streams=True)
    add("GET", "/v1/drover/allocs/changes", CLIENT_ONLY, query=(("node_prefix", node),))
    # Search (nomad/search_endpoint.go): any token; a context named alone needs what reading it
    # does in the namespace (sufficientSearchPerms), `all` keeps those it may; fuzzy across
    # every namespace checks each item instead.
    for route, key, text in (("/v1/search", "Prefix", "w"), ("/v1/search/fuzzy", "Text", "we")):
        add(W, route, EVERYONE, body={key: text, "Context": "all"})
        add(W, route, READ_DEFAULT, body={key: text, "Context": "jobs"})
        add(W, route, NODE_READ, body={key: text, "Context": "nodes"})
        add(W, route, IN_OTHER, body={key: text, "Context": "allocs", "Namespace": "other"})
    add(W, "/v1/search/fuzzy", EVERYONE, body={"Text": "we", "Context": "jobs", "Namespace": "*"})

    # Writes. Jobs: submit-job (or its fine-grained parts) where the job goes: ?namespace=, the body's.
    add(W, "/v1/jobs", WRITE_DEFAULT, body=job_body)
    add(W, "/v1/jobs", IN_OTHER, body=other_job)
    add(W, J, WRITE_DEFAULT, job, body=job_body)
    add(W, f"{J}/plan", WRITE_DEFAULT, f"{job}/plan", body=job_body)
    add(W, f"{J}/plan", IN_OTHER, "/v1/job/api/plan", body=other_job)
    add(W, "/v1/validate/job", READ_DEFAULT, body=job_body)  # Job.Validate: read-job
    add(W, "/v1/validate/job", IN_OTHER, body=other_job)
    add(W, "/v1/jobs/parse", READ_DEFAULT, body={"JobHCL": 'job "x" {}'})  # parse-job, in read
    for tail, body in (("/evaluate", {}), ("/revert", {"JobID": "web", "JobVersion": 0}),
                       ("/stable", {"JobID": "web", "JobVersion": 0, "Stable": True}), ("/scale", {"Count": 1}),
                       ("/periodic/force", None), ("/dispatch", {}), ("/restart", {})):  # fmt: skip
        add(W, J + tail, WRITE_DEFAULT, job + tail, body=body)
    add(W, f"{J}/scale", IN_OTHER, "/v1/job/api/scale", query=(("namespace", "other"),), body={"Count": 1})
    for action in ("pause", "resume"):
        route = f"{J}/restart/{{restart_id}}/{action}"
        add(W, route, WRITE_DEFAULT, f"{job}/restart/{restart}/{action}")
    # Allocs and deployments: alloc-lifecycle, submit-job, in the object's namespace.
    add(W, "/v1/allocation/{alloc_id}/stop", WRITE_DEFAULT, f"/v1/allocation/{alloc}/stop")
    add(W, "/v1/allocation/{alloc_id}/stop", IN_OTHER, f"/v1/allocation/{ids['other_alloc']}/stop")
    add(
        W, "/v1/client/allocation/{alloc_id}/restart", WRITE_DEFAULT, f"/v1/client/allocation/{alloc}/restart"
    )
    for action in ("promote", "pause", "fail"):
        route = f"/v1/deployment/{action}/{{deployment_id}}"
        add(W, route, WRITE_DEFAULT, f"/v1/deployment/{action}/{dep}", body={"DeploymentID": dep})
    # Nodes: node write.
    add(W, "/v1/node/{node_id}/eligibility", NODE_WRITE, f"/v1/node/{node}/eligibility",
        body={"Eligibility": "eligible"})  # fmt: skip
    add(W, "/v1/node/{node_id}/drain", NODE_WRITE, f"/v1/node/{node}/drain", body={"DrainSpec": None})
    # Node introduction (Node.Register): an ACL token with node write; the rest of a client's
    # calls are its node's alone.
    add(W, "/v1/drover/node/register", NODE_WRITE, body={"Node": node_json("n2")})
    add(W, "/v1/drover/node/{node_id}/heartbeat", CLIENT_ONLY, f"/v1/drover/node/{node}/heartbeat")
    add(W, "/v1/drover/heartbeats", CLIENT_ONLY, body={"NodeIDs": [node]})
    add(W, "/v1/drover/node/{node_id}/status", CLIENT_ONLY, f"/v1/drover/node/{node}/status",
        body={"Status": "ready"})  # fmt: skip
    add(W, "/v1/drover/allocs/status", CLIENT_ONLY,
        body={"NodeID": node, "Updates": [{"ID": alloc, "ClientStatus": "running"}]})  # fmt: skip
    add(W, "/v1/drover/services", CLIENT_ONLY, body={"Services": [], "NodeID": node})
    # Variables: by path rule.
    add(W, "/v1/var/{path:path}", VARIABLES, "/v1/var/app/db", body={"Items": {"k": "w"}})
    # The agent, the operator (scheduler configuration: operator write; keyring rotate:
    # keyring-rotate, in operator write).
    add(W, "/v1/agent/join", AGENT_WRITE, query=(("address", "127.0.0.1:4648"),))
    add(W, "/v1/agent/force-leave", AGENT_WRITE, query=(("node", "nobody.global"),))
    add(W, "/v1/agent/servers", AGENT_WRITE, query=(("address", "127.0.0.1:4647"),))
    add(W, "/v1/operator/scheduler/configuration", OPERATOR_WRITE, body={"SchedulerAlgorithm": "binpack"})
    add(W, "/v1/operator/keyring/rotate", OPERATOR_WRITE)
    # Node pools, namespaces, ACL: their writes.
    add(W, "/v1/node/pools", POOL_WRITE, body={"Name": "pool2"})
    add(W, "/v1/node/pool/{name}", POOL_WRITE, f"/v1/node/pool/{pool}", body={"Name": pool})
    add(W, "/v1/namespace", MANAGEMENT, body={"Name": "ns2"})
    add(W, "/v1/namespace/{name}", MANAGEMENT, "/v1/namespace/ns3", body={"Name": "ns3"})
    add(W, "/v1/acl/bootstrap", EVERYONE)  # open; done already, so a 400 for all
    add(W, "/v1/acl/policy/{name}", MANAGEMENT, "/v1/acl/policy/victim", body={"Name": "victim", "Rules": ""})
    add(W, "/v1/acl/token", MANAGEMENT, body={"Type": "client", "Policies": ["victim"]})
    add(W, "/v1/acl/token/{accessor_id}", MANAGEMENT, f"/v1/acl/token/{ids['victim']}",
        body={"AccessorID": ids["victim"], "Type": "client", "Policies": ["victim"]})  # fmt: skip
    # Last of the writes, those that take objects away: a node's purge, the system's GC.
    add(W, "/v1/node/{node_id}/purge", NODE_WRITE, f"/v1/node/{node}/purge")
    add(W, "/v1/system/gc", MANAGEMENT)

    # Deletions.
    add("DELETE", f"{J}/restart/{{restart_id}}", WRITE_DEFAULT, f"{job}/restart/{restart}")
    add("DELETE", "/v1/service/{name}/{service_id}", WRITE_DEFAULT, "/v1/service/web/nothing")
    add("DELETE", "/v1/var/{path:path}", VARIABLES, "/v1/var/app/db")
    add(
        "DELETE", "/v1/operator/raft/peer", MANAGEMENT, query=(("address", "127.0.0.9:4647"),)
    )  # IsManagement
    add("DELETE", "/v1/node/pool/{name}", POOL_WRITE, f"/v1/node/pool/{pool}")
    add("DELETE", "/v1/namespace/{name}", MANAGEMENT, "/v1/namespace/ns3")
    add("DELETE", "/v1/acl/policy/{name}", MANAGEMENT, "/v1/acl/policy/victim")
    add("DELETE", "/v1/acl/token/{accessor_id}", MANAGEMENT, f"/v1/acl/token/{ids['victim']}")
    add("DELETE", J, IN_OTHER, "/v1/job/api", query=(("namespace", "other"),))
    add("DELETE", J, WRITE_DEFAULT, job)
    return out


def app_routes() -> set[tuple[str, str]]:
    """The /v1 routes an app with ACLs on serves (the web console's answer as its sign-in's
    token: tests/test_acl_routes.py and tests/test_ui_signin.py)."""
    settings = Settings(
        database_url="postgresql://nobody@127.0.0.1:1/none", nats_url="nats://unused", acl_enabled=True
    )
    app = create_app(settings)
    return {
        (m, r.path)
        for r in app.router.routes
        if isinstance(r, Route) and not (r.path == "/ui" or r.path.startswith("/ui/"))
        for m in r.methods or ()
    }


def test_the_matrix_asks_every_route_of_the_app() -> None:
    ids = {k: "x" for k in ("alloc", "eval", "deployment", "node", "restart", "scaling", "other_alloc",
                            "victim", "read_accessor")}  # fmt: skip
    asked = {(c.method, c.route) for c in cases(ids)}
    assert sorted(app_routes() - asked) == [], "routes the matrix does not ask"
    assert sorted(asked - app_routes()) == [], "cases for routes the app does not serve"


@pytest.fixture
def world(
    database_url: str, nats_url: str, tmp_path: Path, module_streams_fresh: None
) -> Iterator[tuple[TestClient, dict[str, Any]]]:
    """An app with ACLs on, its callers' headers and the IDs of real objects: the job `web` in
    `default`, the job `api` in `other`, a node, allocs, an eval, a deployment, a restart, a
    variable, a node pool, ACL policies and tokens."""
    settings = Settings(database_url=database_url, nats_url=nats_url, data_dir=str(tmp_path),
                        keyring=str(tmp_path / "keyring.json"), acl_enabled=True,
                        event_heartbeat=0.2)  # fmt: skip
    store = EventStore(database_url)
    with TestClient(create_app(settings, store)) as c:
        r = c.post("/v1/acl/bootstrap")
        assert r.status_code == 200, r.text
        root = {"X-Nomad-Token": r.json()["SecretID"]}

        def ok(method: str, path: str, body: Any = None, **params: str) -> Any:
            r = c.request(method, path, json=body, params=params, headers=root)
            assert r.status_code == 200, (path, r.text)
            return r.json() if r.content else None

        headers: dict[str, dict[str, str]] = {ANON: {}, ROOT: root}
        tokens: dict[str, Any] = {}
        for who, name, rules in ((READER, "readonly", READ_RULES), (OTHER, "other-write", OTHER_RULES),
                                 (NODES, "node-write", NODE_RULES), ("victim", "victim", "")):  # fmt: skip
            ok("PUT", f"/v1/acl/policy/{name}", {"Name": name, "Rules": rules})
            tokens[who] = ok("POST", "/v1/acl/token", {"Name": name, "Type": "client", "Policies": [name]})
            headers[who] = {"X-Nomad-Token": tokens[who]["SecretID"]}
        ok("PUT", "/v1/namespace/other", {"Name": "other"})
        ok("PUT", "/v1/node/pool/pool1", {"Name": "pool1"})
        ok("PUT", "/v1/drover/node/register", {"Node": node_json("n1")})
        ok("PUT", "/v1/jobs", job_json("web", 1))
        other = job_json("api", 1)
        other["Job"]["Namespace"] = "other"
        ok("PUT", "/v1/jobs", other)
        ok("PUT", "/v1/var/app/db", {"Items": {"k": "v"}})
        eval_id = ok("GET", "/v1/job/web/evaluations")[0]["ID"]
        store.append([
            PlanApplied(eval_id=eval_id, job_id="web",
                        allocs=[Allocation(id=str(uuid.uuid4()), job_id="web", task_group="web", node_id="n1",
                                           eval_id=eval_id)],
                        deployment=Deployment(id=str(uuid.uuid4()), job_id="web")),
            PlanApplied(eval_id=str(uuid.uuid4()), job_id="api", namespace="other",
                        allocs=[Allocation(id=str(uuid.uuid4()), namespace="other", job_id="api",
                                           task_group="web", node_id="n1")]),
        ])  # fmt: skip
        allocs = ok("GET", "/v1/allocations", namespace="*")
        restart = c.post("/v1/job/web/restart", json={}, headers=root)
        ids = {
            "node": "n1",
            "eval": eval_id,
            "alloc": next(a["ID"] for a in allocs if a["Namespace"] == "default"),
            "other_alloc": next(a["ID"] for a in allocs if a["Namespace"] == "other"),
            "deployment": ok("GET", "/v1/job/web/deployment")["ID"],
            "restart": restart.json().get("ID", "none") if restart.status_code == 200 else "none",
            "scaling": str(uuid.uuid4()),
            "victim": tokens["victim"]["AccessorID"],
            "read_accessor": tokens[READER]["AccessorID"],
        }
        yield c, {"headers": headers, "ids": ids, "store": store}
    store.close()


def test_every_route_answers_each_caller_as_nomad_does(world: tuple[TestClient, dict[str, Any]]) -> None:
    c, w = world
    store: EventStore = w["store"]
    wrong: list[str] = []
    for case in cases(w["ids"]):
        for who in CALLERS:
            allowed = who in case.allowed
            if case.streams and allowed:
                continue
            before = store.last_position()
            r = c.request(case.method, case.path, params=list(case.query), json=case.body,
                          headers=w["headers"][who])  # fmt: skip
            where = f"{case.method} {case.path}?{case.query} as {who}: {r.status_code} {r.text[:120]!r}"
            if allowed and r.status_code == 403:
                wrong.append(f"refused, Nomad lets it through: {where}")
            elif not allowed and (r.status_code, r.text) != (403, "Permission denied"):
                wrong.append(f"let through, Nomad refuses it: {where}")
            elif not allowed and store.last_position() != before:
                wrong.append(f"refused but written: {where}")
            elif r.status_code >= 500 and r.status_code != 501:  # 501: what Drover does not do
                wrong.append(f"a server error: {where}")
    assert not wrong, "\n".join(wrong)
