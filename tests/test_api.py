"""The HTTP API in-process against a real PostgreSQL: Nomad's paths and JSON, clear errors for
bad input that change nothing, blocking queries, the dry-run plan."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.model import Deployment
from drover.model.events import DeploymentUpserted, EvalsUpserted
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore
from drover.scheduler import evaluate_plan, schedule
from drover.scheduler.planapply import plan_applied_event

from .cluster import SERVICES, Cluster, job_json, node_auth, node_json

# Requests a test left running in the background (`in_background`).
_BACKGROUND: list[threading.Thread] = []


def in_background(fn: Callable[[], None]) -> threading.Thread:
    """Run `fn` (a blocking query) in a thread the `client` fixture waits for."""
    t = threading.Thread(target=fn, daemon=True)
    _BACKGROUND.append(t)
    t.start()
    return t


@pytest.fixture
def client(database_url: str, store: EventStore) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url="nats://unused", max_body_bytes=64 * 1024)
    with TestClient(create_app(settings, EventStore(database_url))) as c:
        c.auth = node_auth()  # the secret of the nodes the tests register (node_json)
        try:
            yield c
        finally:
            # A request still in flight when the TestClient stops its event loop can leave the
            # loop waiting on it for ever (its response is never read): every blocking query a
            # test started is answered first (within its ?wait).
            while _BACKGROUND:
                _BACKGROUND.pop().join(timeout=60)


def test_register_read_and_index_header(client: TestClient, store: EventStore) -> None:
    r = client.put("/v1/jobs", json=job_json("web", 3))
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) >= {"EvalID", "EvalCreateIndex", "JobModifyIndex", "Warnings", "Index"}
    assert body["Index"] == store.last_position() == 2
    r = client.get("/v1/job/web")
    assert r.status_code == 200 and r.headers["X-Nomad-Index"] == "2"
    job = r.json()
    assert job["ID"] == "web" and job["Version"] == 0 and job["TaskGroups"][0]["Count"] == 3
    # Canonicalized: the defaults are filled.
    assert job["TaskGroups"][0]["ReschedulePolicy"]["DelayFunction"] == "exponential"
    assert client.get("/v1/jobs", params={"prefix": "we"}).json()[0]["ID"] == "web"
    assert client.get("/v1/jobs", params={"prefix": "x"}).json() == []
    evals = client.get("/v1/job/web/evaluations").json()
    assert [e["ID"] for e in evals] == [body["EvalID"]] and evals[0]["TriggeredBy"] == "job-register"
    # The eval carries the job's index, as Nomad's does (`nomad eval status -verbose`).
    assert evals[0]["JobModifyIndex"] == body["JobModifyIndex"] == job["JobModifyIndex"] == 1
    # Same spec again: same version; a change: a new version.
    client.put("/v1/jobs", json=job_json("web", 3))
    assert client.get("/v1/job/web").json()["Version"] == 0
    client.put("/v1/jobs", json=job_json("web", 3, cpu=700))
    assert client.get("/v1/job/web").json()["Version"] == 1
    assert [v["Version"] for v in client.get("/v1/job/web/versions").json()["Versions"]] == [1, 0]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "needle"),
    [
        ("put", "/v1/jobs", b"{not json", 400, "Malformed JSON"),
        ("put", "/v1/jobs", b'{"NotAJob": 1}', 400, '"Job"'),
        (
            "put",
            "/v1/jobs",
            b'{"Job": {"ID": "x", "TaskGroups": [{"Name": "g", "Count": "many"}]}}',
            400,
            "Count",
        ),
        ("get", "/v1/job/nope", None, 404, ""),
        ("delete", "/v1/job/nope", None, 404, ""),
        ("get", "/v1/evaluation/nope", None, 404, ""),
        ("get", "/v1/allocation/nope", None, 404, ""),
        ("get", "/v1/node/nope", None, 404, ""),
        ("post", "/v1/allocation/nope/stop", None, 404, "alloc not found"),
        ("post", "/v1/node/nope/purge", None, 404, "node not found"),
        ("post", "/v1/job/nope/revert", b'{"JobID": "nope", "JobVersion": 0}', 404, "job 'nope' not found"),
        ("post", "/v1/job/nope/stable", b'{"JobID": "nope", "Stable": true}', 404, "job 'nope' not found"),
        (
            "post",
            "/v1/job/nope/revert",
            b'{"JobID": "web", "JobVersion": -1}',
            400,
            "Job ID does not match\nJobVersion",
        ),
        ("get", "/v1/job/nope/scale", None, 404, ""),
        ("get", "/v1/nodes?os=maybe&resources=2", None, 400, "os must be a boolean"),
        ("get", "/v1/jobs?index=abc", None, 400, "Invalid index"),
        ("get", "/v1/jobs?index=1&wait=forever", None, 400, "Invalid wait time"),
        (
            "get",
            "/v1/allocations?index=x&wait=forever&per_page=-1",
            None,
            400,
            "Invalid index\nInvalid wait time\nInvalid per_page",
        ),
        ("put", "/v1/drover/node/register", b'{"Node": {"Datacenter": "dc1"}}', 400, "ID"),
        ("put", "/v1/drover/node/nope/status", b'{"Status": "ready"}', 404, ""),
        (
            "put",
            "/v1/drover/allocs/status",
            b'{"Updates": [{"ID": "nope", "ClientStatus": "running"}]}',
            404,
            "nope",
        ),
        (
            "put",
            "/v1/drover/allocs/status",
            b'{"Updates": [{"ID": "x", "ClientStatus": "dancing"}]}',
            400,
            "dancing",
        ),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    client: TestClient,
    store: EventStore,
    method: str,
    path: str,
    body: bytes | None,
    status: int,
    needle: str,
) -> None:
    # A node registered with the client's secret: a client call that names no node is refused
    # (403) for a secret no node registered with, before its input is read.
    assert client.put("/v1/drover/node/register", json={"Node": node_json("n-bad")}).status_code == 200
    before = store.last_position()
    r = client.request(method.upper(), path, content=body)
    assert r.status_code == status, r.text
    assert needle in r.text
    assert store.last_position() == before


def test_invalid_job_lists_every_problem(client: TestClient, store: EventStore) -> None:
    job = job_json("bad job", -1)
    job["Job"]["Type"] = "cron"
    job["Job"]["Priority"] = 500
    job["Job"]["TaskGroups"][0]["ReschedulePolicy"] = {"Delay": 1_000_000_000, "Attempts": 2, "Interval": 5_000_000_000,
                                                         "DelayFunction": "random", "Unlimited": False}  # fmt: skip
    r = client.put("/v1/jobs", json=job)
    assert r.status_code == 400
    lines = r.text.splitlines()
    for needle in ("ID", "type", "riority", "count", "delay 1s", "interval", "delay function"):
        assert any(needle.lower() in ln.lower() for ln in lines), (needle, r.text)
    assert store.last_position() == 0


def test_invalid_blocks_are_each_named_and_nothing_is_written(client: TestClient, store: EventStore) -> None:
    """A register whose networks, services, volumes, lifecycle, templates and scaling break
    Nomad's rules: one 400 naming each problem at its place, no event, no job."""
    job = job_json("blocks", 2)
    group = job["Job"]["TaskGroups"][0]
    group["Networks"] = [
        {
            "DynamicPorts": [{"Label": "http", "To": -2}, {"Label": "http"}],
            "ReservedPorts": [{"Label": "x", "Value": 70000}],
        },
        {"Mode": "overlay"},
    ]
    group["Services"] = [{"Name": "web", "PortLabel": "nope", "Provider": "nomad",
                          "Checks": [{"Type": "script", "Command": "/bin/true"}]}]  # fmt: skip
    group["Volumes"] = {"data": {"Type": "nfs", "Source": "data"}}
    group["Scaling"] = {"Min": 3, "Max": 1}
    task = group["Tasks"][0]
    task["VolumeMounts"] = [{"Volume": "logs", "Destination": "/logs"}]
    task["Templates"] = [{"DestPath": "local/a", "ChangeMode": "reload"}]
    task["Artifacts"] = [{"RelativeDest": "../../etc"}]
    group["Tasks"].append({"Name": "init", "Driver": "mock", "Lifecycle": {"Hook": "prestop"}})
    r = client.put("/v1/jobs", json=job)
    assert r.status_code == 400, r.text
    g, t = "Task group 'web'", "Task group 'web', task 'web'"
    for needle in (
        f"{g}: only one network block is allowed per group, not 2",
        f"{g}: port label 'http' already in use by the group network",
        f"{g}: port 'http' cannot be mapped to negative value -2",
        f"{g}: static port 'x' (70000) is outside 1..65535",
        f"{g}: network mode 'overlay' is unknown",
        f"{g}, service 'web': port label 'nope' does not exist",
        f"{g}, service 'web', check 1: Service [web]->web or Check service: \"web\" check must specify task "
        "parameter",
        f"{g}, service 'web', check 1: missing required value interval",
        f"{g}, volume 'data': volume has unrecognized type 'nfs'",
        f"{g}: scaling: maximum count 1 must not be less than minimum count 3",
        f"{t}, volume_mount 1: volume mount references undefined volume 'logs'",
        f"{t}, template 1: must specify a source path or have an embedded template",
        f"{t}, template 1: invalid change mode 'reload'",
        f"{t}, artifact 1: source must be specified",
        f"{t}, artifact 1: destination '../../etc' escapes the allocation directory",
        "Task group 'web', task 'init': lifecycle: invalid hook 'prestop'",
    ):
        assert needle in r.text, (needle, r.text)
    assert store.last_position() == 0
    assert client.get("/v1/job/blocks").status_code == 404
    # /v1/validate/job lists the same problems, as Nomad's ValidationErrors.
    errors = client.put("/v1/validate/job", json=job).json()["ValidationErrors"]
    assert f"{g}: scaling: maximum count 1 must not be less than minimum count 3" in errors
    assert store.last_position() == 0


def test_a_template_that_would_not_render_is_refused_at_register(
    client: TestClient, store: EventStore
) -> None:
    """A template's data is parsed at register, as the client's renderer would at start: an
    unknown function or bad syntax is a 400 naming the task, the template and the line."""
    job = job_json("tmpl", 1)
    task = job["Job"]["TaskGroups"][0]["Tasks"][0]
    task["Templates"] = [
        {"DestPath": "local/ok.conf", "EmbeddedTmpl": '{{ range nomadService "db" }}{{ .Address }}{{ end }}'},
        {
            "DestPath": "local/app.conf",
            "EmbeddedTmpl": 'port = {{ env "NOMAD_PORT_http" }}\nhost = {{ nomadServise "db" }}',
        },
        {"DestPath": "local/b.conf", "EmbeddedTmpl": "{{ if .x }}\n\nnever ended"},
    ]
    r = client.put("/v1/jobs", json=job)
    assert r.status_code == 400, r.text
    t = "Task group 'web', task 'web'"
    assert f'{t}, template 2: template: local/app.conf:2: function "nomadServise" not defined' in r.text
    assert f"{t}, template 3: template: local/b.conf:3: unexpected EOF" in r.text
    assert "template 1" not in r.text
    assert store.last_position() == 0
    task["Templates"] = task["Templates"][:1]
    assert client.put("/v1/jobs", json=job).status_code == 200


def test_oversized_body_is_413(client: TestClient, store: EventStore) -> None:
    r = client.put("/v1/jobs", content=b"x" * (65 * 1024))
    assert r.status_code == 413
    assert store.last_position() == 0


def test_scale_validates_and_bumps_version(client: TestClient, store: EventStore) -> None:
    client.put("/v1/jobs", json=job_json("web", 3))
    before = store.last_position()
    r = client.put("/v1/job/web/scale", json={"Count": -2, "Target": {"Group": "nope"}})
    assert r.status_code == 400 and "Count" in r.text and "nope" in r.text
    assert store.last_position() == before
    r = client.put("/v1/job/web/scale", json={"Count": 7, "Target": {"Group": "web"}})
    assert r.status_code == 200
    job = client.get("/v1/job/web").json()
    assert job["TaskGroups"][0]["Count"] == 7 and job["Version"] == 1
    assert client.get(f"/v1/evaluation/{r.json()['EvalID']}").json()["TriggeredBy"] == "job-scaling"


def test_scale_is_refused_while_a_deployment_of_the_job_is_active(
    client: TestClient, store: EventStore
) -> None:
    client.put("/v1/jobs", json=job_json("web", 3))
    job = client.get("/v1/job/web").json()
    running = Deployment(id="d1", job_id="web", job_create_index=job["CreateIndex"], status="running")
    store.append([DeploymentUpserted(deployment=running)])
    before = store.last_position()
    r = client.put("/v1/job/web/scale", json={"Count": 7, "Target": {"Group": "web"}})
    # Nomad's status and words: autoscalers match them, to wait and try again.
    assert (r.status_code, r.text) == (400, "job scaling blocked due to active deployment")
    assert store.last_position() == before
    # A report without a count is recorded all the same.
    r = client.put("/v1/job/web/scale", json={"Message": "waiting", "Target": {"Group": "web"}})
    assert r.status_code == 200 and store.last_position() == before + 1
    store.append([DeploymentUpserted(deployment=running.model_copy(update={"status": "successful"}))])
    r = client.put("/v1/job/web/scale", json={"Count": 7, "Target": {"Group": "web"}})
    assert r.status_code == 200 and client.get("/v1/job/web").json()["TaskGroups"][0]["Count"] == 7


def test_plan_is_a_dry_run(client: TestClient, store: EventStore) -> None:
    for i in range(2):
        client.put("/v1/drover/node/register", json={"Node": node_json(f"n{i}")})
    before = store.last_position()
    r = client.put("/v1/job/web/plan", json=job_json("web", 4))
    assert r.status_code == 200, r.text
    assert r.json()["Annotations"]["DesiredTGUpdates"]["web"]["Place"] == 4
    assert store.last_position() == before
    assert client.get("/v1/job/web").status_code == 404


def _commit_plan(store: EventStore, eval_id: str) -> None:
    """Do what a worker and the plan applier would for `eval_id` (no services run here)."""
    state = store.replay()
    evaluation = state.eval(eval_id)
    assert evaluation is not None
    res = schedule(state, evaluation, 1_700_000_000_000_000_000)
    committed = evaluate_plan(state, res.plan)
    store.append([plan_applied_event(committed, 1_700_000_000_000_000_000), EvalsUpserted(evals=[res.eval])])


def test_an_eval_s_allocations_are_the_ones_it_last_wrote(client: TestClient, store: EventStore) -> None:
    def names(eval_id: str) -> list[str]:
        r = client.get(f"/v1/evaluation/{eval_id}/allocations")
        assert r.status_code == 200, r.text
        assert all(a["EvalID"] == eval_id for a in r.json())
        return sorted(a["Name"] for a in r.json())

    for i in range(2):
        client.put("/v1/drover/node/register", json={"Node": node_json(f"n{i}")})
    first = client.put("/v1/jobs", json=job_json("web", 3, rolling=False)).json()["EvalID"]
    _commit_plan(store, first)
    other = client.put("/v1/jobs", json=job_json("other", 2)).json()["EvalID"]
    _commit_plan(store, other)
    assert names(first) == [f"web.web[{i}]" for i in range(3)]
    assert names(other) == ["other.web[0]", "other.web[1]"]
    second = client.put("/v1/job/web/scale", json={"Count": 5, "Target": {"Group": "web"}}).json()["EvalID"]
    _commit_plan(store, second)
    # As in Nomad, an alloc updated in place takes the updating eval's ID.
    assert names(first) == []
    assert names(second) == [f"web.web[{i}]" for i in range(5)]
    assert names(other) == ["other.web[0]", "other.web[1]"]
    assert client.get("/v1/evaluation/nope/allocations").status_code == 404


def test_a_job_s_allocations_come_with_the_index_they_were_read_at(
    client: TestClient, store: EventStore
) -> None:
    """/v1/job/:id/allocations reads the index, the job and its allocs in one statement: 404
    for an unknown job, [] before placement, the allocs (by ID) once placed, and as a blocking
    query it returns when a plan lands, carrying an index that covers what it shows."""
    assert client.get("/v1/job/web/allocations").status_code == 404
    for i in range(2):
        client.put("/v1/drover/node/register", json={"Node": node_json(f"n{i}")})
    eval_id = client.put("/v1/jobs", json=job_json("web", 3)).json()["EvalID"]
    r = client.get("/v1/job/web/allocations")
    assert r.status_code == 200 and r.json() == []
    index = int(r.headers["X-Nomad-Index"])
    assert index == store.last_position()
    result: dict[str, object] = {}

    def blocked_read() -> None:
        r = client.get("/v1/job/web/allocations", params={"index": index, "wait": "20s"})
        result.update(status=r.status_code, index=int(r.headers["X-Nomad-Index"]), allocs=r.json())

    t = in_background(blocked_read)
    time.sleep(0.3)
    assert "status" not in result  # still waiting
    _commit_plan(store, eval_id)
    t.join(timeout=10)
    allocs = result["allocs"]
    assert result["status"] == 200 and isinstance(allocs, list)
    assert result["index"] == store.last_position() > index
    assert sorted(a["Name"] for a in allocs) == [f"web.web[{i}]" for i in range(3)]
    assert [a["ID"] for a in allocs] == sorted(a["ID"] for a in allocs)
    assert all(a["JobID"] == "web" and a["EvalID"] == eval_id and a["DesiredStatus"] == "run" for a in allocs)
    assert all(a["CreateIndex"] <= result["index"] for a in allocs)  # type: ignore[operator]
    other = client.put("/v1/jobs", json=job_json("other", 1)).json()["EvalID"]
    _commit_plan(store, other)
    assert [a["JobID"] for a in client.get("/v1/job/other/allocations").json()] == ["other"]
    assert len(client.get("/v1/job/web/allocations").json()) == 3


def test_lists_page_as_nomad_s_do(client: TestClient, store: EventStore) -> None:
    for i in range(5):
        client.put("/v1/drover/node/register", json={"Node": node_json(f"n{i}")})
    for name in ("a", "b", "c"):
        client.put("/v1/jobs", json=job_json(name, 2))
    for evaluation in client.get("/v1/evaluations").json():
        _commit_plan(store, evaluation["ID"])

    def walk(path: str, per_page: int) -> list[list[str]]:
        pages, token = [], ""
        while True:
            r = client.get(path, params={"per_page": per_page, "next_token": token})
            assert r.status_code == 200, r.text
            pages.append([x["ID"] for x in r.json()])
            token = r.headers.get("X-Nomad-NextToken", "")
            if not token:
                return pages
            following = client.get(path).json()[sum(map(len, pages))]  # the next one
            # Jobs' tokens are Nomad's `<namespace>.<id>`; the others' their ID.
            assert token == (
                f"{following['Namespace']}.{following['ID']}" if path == "/v1/jobs" else following["ID"]
            )

    assert walk("/v1/nodes", 2) == [["n0", "n1"], ["n2", "n3"], ["n4"]]
    assert walk("/v1/jobs", 2) == [["a", "b"], ["c"]]
    for path, total, per_page in (("/v1/evaluations", 3, 2), ("/v1/allocations", 6, 4)):
        every = [x["ID"] for x in client.get(path).json()]
        assert len(every) == total and every == sorted(every)
        pages = walk(path, per_page)
        assert [len(p) for p in pages] == [per_page, total - per_page] and [
            i for p in pages for i in p
        ] == every
        assert walk(path, total) == [every]  # exactly one page: no token
    assert "X-Nomad-NextToken" not in client.get("/v1/allocations").headers
    for bad in ("-1", "two", "1.5"):
        r = client.get("/v1/allocations", params={"per_page": bad})
        assert r.status_code == 400 and "per_page" in r.text


def test_a_list_prefix_is_taken_literally(client: TestClient) -> None:
    for node_id in ("rack_1-a", "rackx1-b", "rack%1-c"):
        client.put("/v1/drover/node/register", json={"Node": node_json(node_id)})
    assert [n["ID"] for n in client.get("/v1/nodes", params={"prefix": "rack_"}).json()] == ["rack_1-a"]
    assert [n["ID"] for n in client.get("/v1/nodes", params={"prefix": "rack%"}).json()] == ["rack%1-c"]


def test_blocking_query_returns_when_the_index_moves(client: TestClient, store: EventStore) -> None:
    client.put("/v1/jobs", json=job_json("web", 1))
    index = store.last_position()
    result: dict[str, object] = {}

    def blocked_read() -> None:
        t0 = time.monotonic()
        r = client.get("/v1/jobs", params={"index": index, "wait": "20s"})
        result.update(status=r.status_code, index=int(r.headers["X-Nomad-Index"]), took=time.monotonic() - t0)

    t = in_background(blocked_read)
    time.sleep(0.5)
    assert "status" not in result  # still waiting
    client.put("/v1/jobs", json=job_json("other", 1))
    t.join(timeout=10)
    assert result["status"] == 200 and result["index"] > index and result["took"] < 5  # type: ignore[operator]
    # An elapsed wait returns the current state with the same index.
    r = client.get("/v1/jobs", params={"index": store.last_position(), "wait": "100ms"})
    assert r.status_code == 200 and int(r.headers["X-Nomad-Index"]) == store.last_position()


def test_a_blocking_query_wakes_only_when_what_it_reads_changes(
    client: TestClient, store: EventStore
) -> None:
    """As Nomad's: a query on one job's allocs, or one node's, sleeps through writes to other
    jobs and nodes (a client agent waiting on its node is not woken by every plan), and
    returns once its own change commits."""
    for i in range(2):
        client.put("/v1/drover/node/register", json={"Node": node_json(f"n{i}")})
    _commit_plan(store, client.put("/v1/jobs", json=job_json("web", 1)).json()["EvalID"])
    (alloc,) = client.get("/v1/job/web/allocations").json()
    spare = "n1" if alloc["NodeID"] == "n0" else "n0"
    index = store.last_position()
    results: dict[str, dict[str, object]] = {}

    def blocked(path: str) -> threading.Thread:
        def read() -> None:
            t0 = time.monotonic()
            r = client.get(path, params={"index": index, "wait": "20s"})
            results[path] = {
                "took": time.monotonic() - t0,
                "index": int(r.headers["X-Nomad-Index"]),
                "body": r.json(),
            }

        return in_background(read)

    paths = [
        "/v1/job/web/allocations",
        f"/v1/node/{alloc['NodeID']}/allocations",
        f"/v1/allocation/{alloc['ID']}",
        f"/v1/node/{spare}/allocations",
        "/v1/allocations",
    ]
    threads = [blocked(p) for p in paths]
    time.sleep(0.3)
    # Another job, placed on the other node (the web alloc's node is full for it).
    client.put("/v1/drover/node/register", json={"Node": node_json("n2")})
    _commit_plan(store, client.put("/v1/jobs", json=job_json("other", 1, cpu=3800)).json()["EvalID"])
    (other,) = client.get("/v1/job/other/allocations").json()
    assert other["NodeID"] != alloc["NodeID"]
    deadline = time.monotonic() + 5
    while "/v1/allocations" not in results and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "/v1/allocations" in results  # the list of every alloc changed
    time.sleep(0.5)
    woken = set(results) - {"/v1/allocations"}
    expect_woken = {f"/v1/node/{spare}/allocations"} if other["NodeID"] == spare else set()
    assert woken == expect_woken
    r = client.put(
        "/v1/drover/allocs/status",
        json={"NodeID": alloc["NodeID"], "Updates": [{"ID": alloc["ID"], "ClientStatus": "running"}]},
    )
    assert r.status_code == 200, r.text
    for t in threads[:3]:
        t.join(timeout=10)
    for p in paths[:3]:
        res = results[p]
        assert res["took"] < 10 and res["index"] == store.last_position()  # type: ignore[operator]
        body = res["body"]
        shown = body if isinstance(body, list) else [body]
        assert [a["ClientStatus"] for a in shown if a["ID"] == alloc["ID"]] == ["running"]  # type: ignore[index]
    spare_path = paths[3]
    if other["NodeID"] != spare:
        assert spare_path not in results  # nothing on the spare node changed yet
        r = client.put(f"/v1/node/{spare}/eligibility", json={"Eligibility": "ineligible"})
        assert r.status_code == 200, r.text
    threads[3].join(timeout=10)
    assert results[spare_path]["took"] < 15  # type: ignore[operator]


def test_a_blocking_query_is_not_left_asleep_by_notifications_missed(
    client: TestClient, store: EventStore
) -> None:
    """Commits notified while the API's LISTEN connection was away are never heard: on
    reconnecting it must take anything as changed, so a query waiting on the job that moved
    meanwhile is answered."""
    client.put("/v1/drover/node/register", json={"Node": node_json("n0")})
    eval_id = client.put("/v1/jobs", json=job_json("web", 2)).json()["EvalID"]
    index = store.last_position()
    result: dict[str, object] = {}

    def blocked_read() -> None:
        r = client.get("/v1/job/web/allocations", params={"index": index, "wait": "30s"})
        result.update(index=int(r.headers["X-Nomad-Index"]), allocs=r.json())

    t = in_background(blocked_read)
    time.sleep(0.3)
    with store.engine.connect() as conn:
        # The listener away (it reconnects after half a second), the plan committed meanwhile.
        killed = (
            conn.exec_driver_sql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND query LIKE 'LISTEN %%'"
            )
            .scalars()
            .all()
        )
        assert killed == [True]
        _commit_plan(store, eval_id)
    t.join(timeout=10)
    assert not t.is_alive()
    assert result["index"] == store.last_position()
    assert len(result["allocs"]) == 2  # type: ignore[arg-type]


def test_openapi_document_is_served(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    assert "/v1/jobs" in doc["paths"] and "/v1/job/{job_id}/allocations" in doc["paths"]


def test_a_stopping_api_answers_its_blocking_queries_at_once(
    database_url: str, nats_url: str, tmp_path: Path
) -> None:
    """uvicorn waits for every request in flight before it stops: a client agent's blocking
    query would hold the stop for its whole ?wait. The API process answers them at once."""
    cluster = Cluster(database_url, nats_url, tmp_path)
    cluster.counts = {svc: int(svc == "api") for svc in SERVICES}
    cluster.start()
    try:
        cluster.put("/v1/drover/node/register", {"Node": node_json("n0")})
        index = int(cluster.http.get("/v1/node/n0/allocations").headers["X-Nomad-Index"])
        result: dict[str, object] = {}

        def blocked_read() -> None:
            r = httpx.get(
                f"{cluster.http.base_url}/v1/node/n0/allocations",
                params={"index": index, "wait": "60s"},
                timeout=90,
            )
            result.update(status=r.status_code, allocs=r.json())

        t = threading.Thread(target=blocked_read, daemon=True)
        t.start()
        time.sleep(0.5)
        assert not result  # still waiting
        api = cluster.procs["api"][0]
        t0 = time.monotonic()
        api.terminate()
        api.wait(timeout=30)
        stopped = time.monotonic() - t0
        t.join(timeout=5)
        assert result == {"status": 200, "allocs": []}
        assert stopped < 5, f"the API took {stopped:.1f} s to stop"
    finally:
        cluster.stop()


def test_openapi_documents_every_request_body(client: TestClient) -> None:
    """Every write reads its body through a request model, so /openapi.json documents it; only
    the writes that take no body lack one."""
    doc = client.get("/openapi.json").json()
    bodiless = set()
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            if method in ("put", "post") and "requestBody" not in op:
                bodiless.add(path)
    assert bodiless == {
        "/v1/job/{job_id}/evaluate",
        "/v1/job/{job_id}/periodic/force",
        "/v1/deployment/fail/{deployment_id}",
        "/v1/drover/node/{node_id}/heartbeat",
        "/v1/job/{job_id}/restart/{restart_id}/pause",
        "/v1/job/{job_id}/restart/{restart_id}/resume",
        "/v1/allocation/{alloc_id}/stop",
        "/v1/node/{node_id}/purge",
        "/v1/system/gc",
        "/v1/operator/keyring/rotate",
        # Query parameters alone, as Nomad's: ?address=, ?node=&prune=.
        "/v1/agent/join",
        "/v1/agent/force-leave",
        "/v1/agent/servers",
    }
    job = doc["components"]["schemas"]["Job"]["properties"]
    assert {"ID", "TaskGroups", "Datacenters"} <= set(job)
    register = doc["paths"]["/v1/jobs"]["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert register == {"$ref": "#/components/schemas/JobRegisterRequest"}


@pytest.mark.parametrize(
    "content_type", [None, "application/x-www-form-urlencoded", "text/plain", "application/json"]
)
def test_a_body_is_json_whatever_its_content_type_says(
    client: TestClient, store: EventStore, content_type: str | None
) -> None:
    """`curl -d` sends a form content type, a bare client none: the body is read as JSON, as
    Nomad's agent reads it."""
    headers = {"Content-Type": content_type} if content_type else {}
    r = client.put("/v1/jobs", content=json.dumps(job_json("web", 1)).encode(), headers=headers)
    assert r.status_code == 200, r.text
    assert client.get("/v1/job/web").json()["ID"] == "web"
