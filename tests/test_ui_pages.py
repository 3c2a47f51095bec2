"""The web console's pages over HTML, in-process against a real PostgreSQL (no browser): each
page and fragment renders what the reads say, lists filter and page on the server, every
action runs its command and refuses a post without the session's CSRF token, and the SQL that
filters jobs by status derives it as the model does."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from drover.api.app import create_app
from drover.api.streamhub import Subscription, frame
from drover.api.ui import live
from drover.model import Job
from drover.model.events import EvalsUpserted
from drover.model.job import derive_job_status
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore
from drover.runtime.store.listreads import JOB_STATUS_SQL
from drover.scheduler import evaluate_plan, schedule
from drover.scheduler.planapply import plan_applied_event

from .cluster import job_json, node_json

NOW = 1_700_000_000_000_000_000


@pytest.fixture
def client(database_url: str, store: EventStore) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url="nats://unused", max_body_bytes=64 * 1024)
    with TestClient(create_app(settings, EventStore(database_url))) as c:
        yield c


def _place(store: EventStore, eval_id: str) -> None:
    """What a worker and the plan applier would do for `eval_id` (no services run here)."""
    state = store.replay()
    evaluation = state.eval(eval_id)
    assert evaluation is not None
    res = schedule(state, evaluation, NOW)
    committed = evaluate_plan(state, res.plan)
    store.append([plan_applied_event(committed, NOW), EvalsUpserted(evals=[res.eval])])


def _job(client: TestClient, store: EventStore, job_id: str, count: int = 2, **kw: Any) -> str:
    r = client.put("/v1/jobs", json=job_json(job_id, count, **kw))
    assert r.status_code == 200, r.text
    return str(r.json()["EvalID"])


def _node(client: TestClient, node_id: str) -> None:
    r = client.put("/v1/drover/node/register", json={"Node": node_json(node_id)})
    assert r.status_code == 200, r.text


def _csrf(client: TestClient, page: str = "/ui/") -> str:
    r = client.get(page)
    m = re.search(r'name="csrf_token" value="([^"]+)"', r.text)
    assert m, r.text[:500]
    return m.group(1)


def test_every_page_renders_its_objects_and_names_their_topics(client: TestClient, store: EventStore) -> None:
    _node(client, "node-a")
    _place(store, _job(client, store, "web", 2, rolling=False))
    alloc = client.get("/v1/job/web/allocations").json()[0]

    r = client.get("/ui/")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    assert (
        "frame-ancestors 'none'" in r.headers["content-security-policy"]
        and r.headers["x-frame-options"] == "DENY"
    )
    assert 'id="f-health"' in r.text and "JobRegistered" in r.text  # recent activity, from the log
    assert re.search(r'<body data-index="(\d+)"', r.text).group(1) == str(store.last_position())

    r = client.get("/ui/jobs")
    assert 'href="/ui/jobs/web@default"' in r.text and "2 running" not in r.text  # placed, not yet running
    assert 'data-topics="Allocation:web Evaluation:web Job:*"' in r.text

    r = client.get("/ui/jobs/web@default")
    assert r.status_code == 200
    for name in ("summary", "deployment", "allocations", "evaluations", "versions"):
        assert f'id="f-{name}"' in r.text
    assert alloc["ID"][:8] in r.text and 'action="/ui/job/stop/web@default"' in r.text
    assert 'data-topics="Allocation:web Job:web"' in r.text

    # A fragment alone, as htmx re-fetches it.
    r = client.get("/ui/jobs/web@default", params={"fragment": "allocations"})
    assert r.text.startswith('<section id="f-allocations"') and "<html" not in r.text
    assert alloc["ID"][:8] in r.text

    r = client.get(f"/ui/allocations/{alloc['ID']}")
    assert r.status_code == 200 and "node-a" in r.text and "Top-scoring clients" in r.text
    r = client.get("/ui/nodes")
    assert 'href="/ui/nodes/node-a"' in r.text and 'action="/ui/node/drain/node-a"' in r.text
    r = client.get("/ui/nodes/node-a")
    assert alloc["ID"][:8] in r.text and "web" in r.text
    r = client.get("/ui/evaluations")
    assert "job-register" in r.text

    for missing in ("/ui/jobs/nope@default", "/ui/allocations/nope", "/ui/nodes/nope"):
        r = client.get(missing)
        assert r.status_code == 404 and "Not found" in r.text, missing
    assert client.get("/ui/jobs/web@default", params={"fragment": "nope"}).status_code == 404
    assert client.get("/ui/static/drover.js").status_code == 200
    assert client.get("/ui", follow_redirects=False).headers["location"] == "/ui/"


def test_the_jobs_list_filters_and_pages_on_the_server(client: TestClient, store: EventStore) -> None:
    _node(client, "node-a")
    for i in range(30):
        _job(client, store, f"svc-{i:02d}", 1)
    _job(client, store, "batchy", 1)
    client.put("/v1/jobs", json={"Job": {**job_json("nightly", 1)["Job"], "Type": "batch"}})
    _place(store, client.get("/v1/job/svc-00/evaluations").json()[0]["ID"])

    def names(html: str) -> list[str]:
        return re.findall(r'<tr data-job="([^"]+)"', html)

    first = client.get("/ui/jobs").text
    assert len(names(first)) == 25 and names(first) == sorted(names(first))
    assert 'rel="prev"' not in first  # the first page has none
    after = re.search(r'rel="next" href="([^"]+)"', first).group(1).replace("&amp;", "&")
    second = client.get("/ui/jobs" + after).text
    assert len(names(second)) == 7 and not set(names(first)) & set(names(second))
    before = re.search(r'rel="prev" href="([^"]+)"', second).group(1).replace("&amp;", "&")
    assert names(client.get("/ui/jobs" + before).text) == names(first)

    assert names(client.get("/ui/jobs", params={"type": "batch"}).text) == ["nightly"]
    assert names(client.get("/ui/jobs", params={"q": "SVC-2"}).text) == [f"svc-2{i}" for i in range(10)]
    # svc-00 was placed: running; the rest have only their pending eval.
    assert names(client.get("/ui/jobs", params={"status": "running"}).text) == ["svc-00"]
    assert "svc-00" not in names(client.get("/ui/jobs", params={"status": "pending"}).text)
    assert names(client.get("/ui/jobs", params={"namespace": "other"}).text) == []


def test_sql_job_status_is_the_models(client: TestClient, store: EventStore) -> None:
    """JOB_STATUS_SQL filters jobs by status: it must say what derive_job_status says."""
    _node(client, "node-a")
    _place(store, _job(client, store, "placed", 1))
    _job(client, store, "waiting", 1)
    _place(store, _job(client, store, "stopped", 1))
    _place(store, client.delete("/v1/job/stopped").json()["EvalID"])  # its allocs stopped, its evals done
    client.put("/v1/jobs", json={"Job": {**job_json("sys", 1)["Job"], "Type": "system"}})
    periodic = {**job_json("cron", 1)["Job"], "Type": "batch", "Periodic": {"Crons": ["0 * * * *"]}}
    client.put("/v1/jobs", json={"Job": periodic})
    with store.engine.connect() as conn:
        rows = conn.execute(text(f"SELECT j.id, j.doc::text, {JOB_STATUS_SQL} FROM jobs j")).all()
        seen = set()
        for job_id, doc, sql_status in rows:
            job = Job.model_validate_json(doc)
            allocs = conn.execute(
                text("SELECT desired_status, client_status FROM allocs WHERE job_id = :j"), {"j": job_id}
            ).all()
            evals = conn.execute(text("SELECT status FROM evals WHERE job_id = :j"), {"j": job_id}).all()
            live_allocs = any(
                d not in ("stop", "evict") and c not in ("complete", "failed", "lost") for d, c in allocs
            )
            live_evals = any(s not in ("complete", "failed", "canceled") for (s,) in evals)
            expected = derive_job_status(job, has_allocs=bool(allocs), live_allocs=live_allocs,
                                         has_evals=bool(evals), live_evals=live_evals)  # fmt: skip
            assert sql_status == expected, job_id
            seen.add(expected)
    assert seen == {"running", "pending", "dead"}


def test_actions_run_their_commands_and_need_the_csrf_token(client: TestClient, store: EventStore) -> None:
    _node(client, "node-a")
    _place(store, _job(client, store, "web", 2, rolling=False))
    token = _csrf(client, "/ui/jobs/web@default")
    before = store.last_position()

    # No token, a wrong one, or another site's Origin: refused, nothing written.
    assert client.post("/ui/job/stop/web@default", data={}).status_code == 403
    assert client.post("/ui/job/stop/web@default", data={"csrf_token": "x" * 43}).status_code == 403
    forged = client.post("/ui/job/stop/web@default", data={"csrf_token": token},
                         headers={"Origin": "http://evil.example"})  # fmt: skip
    assert forged.status_code == 403
    assert store.last_position() == before

    r = client.post("/ui/job/scale/web@default", data={"csrf_token": token, "group": "web", "count": "3"},
                    follow_redirects=False)  # fmt: skip
    assert r.status_code == 303 and r.headers["location"] == "/ui/jobs/web@default"
    assert client.get("/v1/job/web").json()["TaskGroups"][0]["Count"] == 3
    assert "Group web scaled to 3" in client.get("/ui/jobs/web@default").text  # the flash, once
    assert "scaled to 3" not in client.get("/ui/jobs/web@default").text

    r = client.post("/ui/job/stop/web@default", headers={"X-CSRF-Token": token}, follow_redirects=False)
    assert r.status_code == 303 and client.get("/v1/job/web").json()["Stop"] is True
    page = client.get("/ui/jobs/web@default").text
    assert 'action="/ui/job/start/web@default"' in page
    client.post("/ui/job/start/web@default", data={"csrf_token": token})
    assert client.get("/v1/job/web").json()["Stop"] is False

    # A refusal comes back as the command words it.
    r = client.post("/ui/job/scale/web@default", data={"csrf_token": token, "group": "nope", "count": "1"})
    assert re.search(r'class="flash flash-error" role="alert">[^<]*nope', r.text), r.text[-3000:]

    client.post("/ui/node/eligibility/node-a", data={"csrf_token": token, "eligible": "false"})
    assert client.get("/v1/node/node-a").json()["SchedulingEligibility"] == "ineligible"
    client.post("/ui/node/drain/node-a", data={"csrf_token": token, "enable": "true", "deadline": "30m"})
    assert client.get("/v1/node/node-a").json()["DrainStrategy"]["DrainSpec"]["Deadline"] == 30 * 60 * 10**9
    client.post("/ui/node/drain/node-a", data={"csrf_token": token, "enable": "false"})
    assert client.get("/v1/node/node-a").json()["DrainStrategy"] is None

    alloc = client.get("/v1/job/web/allocations").json()[0]["ID"]
    client.post(f"/ui/allocation/stop/{alloc}", data={"csrf_token": token})
    assert client.get(f"/v1/allocation/{alloc}").json()["DesiredTransition"]["Migrate"] is True


def test_theme_cookie_and_dark_mode(client: TestClient) -> None:
    assert "data-theme" not in client.get("/ui/").text.split("<body")[0]  # the system's
    token = _csrf(client)
    client.post("/ui/theme", data={"csrf_token": token, "theme": "dark"})
    assert '<html lang="en" data-theme="dark">' in client.get("/ui/").text
    client.post("/ui/theme", data={"csrf_token": token, "theme": ""})
    assert "data-theme" not in client.get("/ui/").text.split("<body")[0]


def test_an_event_names_the_topics_of_the_tab_it_matches() -> None:
    """What /ui/events sends for a frame: the tab's `Topic:Key`s the frame's events match, by
    key or filter key (an alloc's job), `*` for every key; worked out once per frame."""
    alloc_event = {"Topic": "Allocation", "Key": "a1", "Namespace": "default", "FilterKeys": ["web", "d1"]}
    job_event = {"Topic": "Job", "Key": "api", "Namespace": "default", "FilterKeys": None}
    f = frame(7, [(alloc_event, b""), (job_event, b"")])
    tab = Subscription({"Allocation": {"web"}, "Job": {"*"}, "Node": {"n1"}}, "*")
    assert live.hits(f, tab) == {"Allocation:web", "Job:*"}
    other = Subscription({"Allocation": {"api"}, "Deployment": {"web"}}, "*")
    assert live.hits(f, other) == frozenset()
    assert f.hits[tab.key] == {"Allocation:web", "Job:*"}
    assert (
        live.message("change", 7, "Allocation:web Job:*")
        == b"id: 7\nevent: change\ndata: Allocation:web Job:*\n\n"
    )


def test_ago() -> None:
    from drover.api.ui.render import ago

    now = time.time()
    assert ago(int((now - 90) * 1e9), now) == "1m ago"
    assert ago(int((now - 3 * 3600) * 1e9), now) == "3h ago"
    assert ago(0, now) == "-"


def test_a_live_refresh_is_answered_from_a_read_at_least_as_new_as_its_event(
    client: TestClient, store: EventStore
) -> None:
    """Tabs woken by one event ask for its index (`at`): the first read serves them all, and a
    later event's index is never answered with an older read."""
    _job(client, store, "web", 2, rolling=False)
    url = "/ui/jobs/web@default"
    at = store.last_position()
    r = client.get(url, params={"fragment": "summary", "at": at})
    assert 'data-group="web"' in r.text and "<td>2</td>" in r.text
    client.put("/v1/job/web/scale", json={"Count": 5, "Target": {"Group": "web"}})
    # Another tab woken by the same (older) event: the read already made answers it.
    assert "<td>2</td>" in client.get(url, params={"fragment": "summary", "at": at}).text
    # The scale's own event: a new read.
    fresh = client.get(url, params={"fragment": "summary", "at": store.last_position()}).text
    assert "<td>5</td>" in fresh and "<td>2</td>" not in fresh
    # Each answer carries its own session's token, never another's.
    other = TestClient(client.app)
    mine = re.search(r'name="csrf_token" value="([^"]+)"', fresh).group(1)
    theirs = other.get(url, params={"fragment": "summary", "at": store.last_position()}).text
    assert mine not in theirs and 'name="csrf_token"' in theirs


def test_placement_failures_name_the_clients_ruled_out_and_why(client: TestClient, store: EventStore) -> None:
    _node(client, "node-a")
    _node(client, "node-b")
    client.put("/v1/node/node-b/eligibility", json={"Eligibility": "ineligible"})
    body = job_json("win", 1)
    body["Job"]["Constraints"] = [{"LTarget": "${attr.kernel.name}", "RTarget": "windows", "Operand": "="}]
    client.put("/v1/jobs", json=body)
    _place(store, client.get("/v1/job/win/evaluations").json()[0]["ID"])

    page = client.get("/ui/jobs/win@default").text
    assert 'data-failed-group="web"' in page and "1 unplaced" in page
    why = client.get("/ui/jobs/win@default", params={"fragment": "why", "group": "web"}).text
    assert len(re.findall(r"<h4>", why)) == 2  # a reason each
    assert re.search(
        r"<h4>1 client: <code>ineligible for scheduling</code></h4>\s*<ul[^>]*><li><a href=\"/ui/nodes/node-b\"",
        why,
    )
    assert re.search(
        r"<h4>1 client: <code>\$\{attr.kernel.name\} = windows</code></h4>\s*<ul[^>]*><li><a href=\"/ui/nodes/node-a\"",
        why,
    ), why
    assert "0 of 2 clients pass" in why

    # An alloc's page loads the same judgement when asked (its <details> opened).
    _place(store, _job(client, store, "web", 1, rolling=False))
    alloc = client.get("/v1/job/web/allocations").json()[0]["ID"]
    page = client.get(f"/ui/allocations/{alloc}").text
    assert 'hx-trigger="toggle once from:closest details"' in page and "node-b" not in page
    why = client.get(f"/ui/allocations/{alloc}", params={"fragment": "why"}).text
    assert "1 of 2 clients pass" in why and 'href="/ui/nodes/node-b"' in why


def test_one_function_decides_what_a_request_may_do(
    client: TestClient, store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one seam ACLs fill (tests/test_ui_signin.py): `access.may` hides each control and
    refuses its action."""
    from drover.api.ui import access

    _node(client, "node-a")
    _place(store, _job(client, store, "web", 1, rolling=False))
    token = _csrf(client, "/ui/jobs/web@default")
    asked: list[tuple[str, str]] = []

    def read_only(request: Any, capability: str, namespace: str = "default") -> bool:
        asked.append((capability, namespace))
        return capability in ("read-job", "node:read")

    monkeypatch.setattr(access, "may", read_only)
    page = client.get("/ui/jobs/web@default").text
    assert "/ui/job/stop/" not in page and "/ui/job/scale/" not in page
    assert "/ui/node/drain/" not in client.get("/ui/nodes").text
    before = store.last_position()
    r = client.post("/ui/job/stop/web@default", data={"csrf_token": token})
    assert r.status_code == 403 and store.last_position() == before
    assert ("submit-job", "default") in asked and ("node:write", "default") in asked


def test_an_action_goes_back_only_to_a_console_page(client: TestClient, store: EventStore) -> None:
    _node(client, "node-a")
    token = _csrf(client, "/ui/nodes")
    form = {"csrf_token": token, "eligible": "false"}
    here = client.post("/ui/node/eligibility/node-a", data=form, follow_redirects=False,
                       headers={"Referer": "http://testserver/ui/nodes?status=ready"})  # fmt: skip
    assert here.headers["location"] == "/ui/nodes?status=ready"
    away = client.post("/ui/node/eligibility/node-a", data=form, follow_redirects=False,
                       headers={"Referer": "http://elsewhere.example/ui/nodes"})  # fmt: skip
    assert away.headers["location"] == "/ui/nodes/node-a"


def test_with_acls_off_there_is_no_one_to_sign_in(client: TestClient) -> None:
    page = client.get("/ui/signin")
    assert (
        page.status_code == 200
        and "ACLs are not enabled" in page.text
        and 'name="secret_id"' not in page.text
    )
    assert 'id="who"' not in client.get("/ui/jobs").text  # no "signed in as" nor "anonymous"
    r = client.post(
        "/ui/signin", data={"csrf_token": _csrf(client, "/ui/jobs"), "secret_id": str(uuid.uuid4())}
    )
    assert r.status_code == 400 and "drover_token" not in r.headers.get("set-cookie", "")


def test_several_fragments_in_one_answer_are_each_as_when_asked_for_alone(
    client: TestClient, store: EventStore
) -> None:
    """What the event stream asks for when one event touches several fragments of a page."""
    from drover.api.ui.render import SEPARATOR

    _job(client, store, "web", 2, rolling=False)
    url = "/ui/jobs/web@default"
    at = store.last_position()
    both = client.get(f"{url}?fragment=summary&fragment=versions&at={at}")
    assert both.status_code == 200
    alone = [client.get(url, params={"fragment": n, "at": at}).text for n in ("summary", "versions")]
    assert both.text.split(SEPARATOR) == alone and 'data-group="web"' in alone[0]
    for bad in ("fragment=summary&fragment=nope", "fragment=summary&fragment=summary"):
        assert client.get(f"{url}?{bad}").status_code == 404, bad
    assert client.get("/ui/jobs/gone@default?fragment=summary&fragment=versions").status_code == 404
