"""A job's page tells what happened and why (its timeline, from the log and the projections,
paged on log positions), starts a job restart and pauses, resumes and cancels it with the
session's CSRF token; an alloc's page shows its reschedule chain and its placement metrics;
the overview names the exhausted clients of a blocked eval. Plain pytest over HTML, in-process
against a real PostgreSQL, placing evals as a worker would (`_place`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.control.leader.jobrestartwatcher import watch_job_restart
from drover.model.alloc import TaskEvent, TaskState
from drover.model.evaluation import job_eval
from drover.model.events import AllocClientUpdate, AllocsClientUpdated, EvalsUpserted
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore
from drover.runtime.store.queries import Reads
from drover.scheduler import evaluate_plan, schedule
from drover.scheduler.planapply import plan_applied_event

from .cluster import job_json
from .test_ui_pages import NOW, _csrf, _job, _node, _place


@pytest.fixture
def client(database_url: str, store: EventStore) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url="nats://unused", max_body_bytes=64 * 1024)
    with TestClient(create_app(settings, EventStore(database_url))) as c:
        yield c


URL = "/ui/jobs/web@default"


def _timeline(c: TestClient, **params: Any) -> str:
    r = c.get(URL, params={"fragment": "timeline", **params})
    assert r.status_code == 200, r.text
    return r.text


def _texts(html: str) -> list[str]:
    return [
        re.sub(r"\s+", " ", t).strip() for t in re.findall(r'<span class="tl-text">(.*?)</span>', html, re.S)
    ]


def _report(store: EventStore, alloc: dict[str, Any], status: str, at: int, event: TaskEvent) -> None:
    """A client's report of `alloc`, with one task event."""
    state = TaskState(state="dead" if status == "failed" else "running", failed=status == "failed",
                      started_at=at - 10**9, finished_at=at if status == "failed" else 0, events=[event])  # fmt: skip
    update = AllocClientUpdate(id=alloc["ID"], client_status=status, task_states={"web": state}, at=at)
    store.append([AllocsClientUpdated(node_id=alloc["NodeID"], updates=[update])])


def _rescheduling(job_id: str, count: int) -> dict[str, Any]:
    body = job_json(job_id, count, rolling=False)
    body["Job"]["TaskGroups"][0]["ReschedulePolicy"] = {
        "Attempts": 3, "Interval": 3600 * 10**9, "Delay": 5 * 10**9, "DelayFunction": "constant", "Unlimited": False,
    }  # fmt: skip
    return body


def test_the_timeline_tells_registers_evals_placements_and_failures(
    client: TestClient, store: EventStore
) -> None:
    _node(client, "node-a")
    assert client.put("/v1/jobs", json=_rescheduling("web", 2)).status_code == 200
    _place(store, client.get("/v1/job/web/evaluations").json()[0]["ID"])
    texts = _texts(_timeline(client))
    assert "Version 0 registered (2 allocations wanted)." in texts
    assert "Evaluation triggered by the job was registered [job-register]: complete." in texts
    assert "Placed 2 allocations of group web: 2 on node-a." in texts
    # The newest first: the placement, then its eval, then the register.
    order = [t.split(" ")[0] for t in texts]
    assert order.index("Placed") < order.index("Version")

    # An alloc fails: said with the task's reason; the scheduler replaces it (the tracker's attempt).
    failed = client.get("/v1/job/web/allocations").json()[0]
    _report(store, failed, "failed", NOW - 60 * 10**9,
            TaskEvent(type="Terminated", time=NOW - 60 * 10**9, display_message="Exit Code: 3"))  # fmt: skip
    job = Reads(store).job("default", "web")
    assert job is not None
    retry = job_eval(job, "alloc-failure", NOW)
    store.append([EvalsUpserted(evals=[retry])])
    _place(store, retry.id)
    html = _timeline(client)
    texts = _texts(html)
    assert any(
        t.startswith(f"Allocation {failed['Name']} failed: task web: Terminated, Exit Code: 3") for t in texts
    ), texts
    assert "Evaluation triggered by an allocation failing (reschedule) [alloc-failure]: complete." in texts
    replaced = next(t for t in texts if t.startswith(f"Rescheduled allocation {failed['ID'][:8]}"))
    assert replaced.endswith("on node-a (attempt 1)."), replaced
    assert f'href="/ui/allocations/{failed["ID"]}"' in html and 'href="/ui/nodes/node-a"' in html

    # A group no client can take: the placement failure, with the reason.
    body = job_json("web", 3, rolling=False)
    body["Job"]["Constraints"] = [{"LTarget": "${attr.kernel.name}", "RTarget": "windows", "Operand": "="}]
    client.put("/v1/jobs", json=body)
    _place(store, client.get("/v1/job/web/evaluations").json()[0]["ID"])
    texts = _texts(_timeline(client))
    assert "Version 1 registered (3 allocations wanted)." in texts
    assert any(re.fullmatch(r"Could not place \d+ allocations? of group web: 1 client filtered by "
                            r"\$\{attr.kernel.name\} = windows\.", t) for t in texts), texts  # fmt: skip
    # Live: the fragment names the job's topics, restarts' included.
    page = client.get(URL).text
    assert 'data-topics="Allocation:web Deployment:web Evaluation:web Job:web JobRestart:web"' in page


def test_the_timeline_pages_on_log_positions(client: TestClient, store: EventStore) -> None:
    for i in range(30):
        assert client.put("/v1/jobs", json=job_json("web", i + 1, rolling=False)).status_code == 200
    first = _timeline(client)
    # Each register made an eval: 60 entries, 25 positions a page.
    positions = [int(p) for p in re.findall(r'data-position="(\d+)"', first)]
    assert len(set(positions)) == 25 and positions == sorted(positions, reverse=True)
    older = re.search(r'rel="next" href="\?older=(\d+)#f-timeline"', first)
    assert older, first[-800:]
    second = _timeline(client, older=older.group(1))
    seen = [int(p) for p in re.findall(r'data-position="(\d+)"', second)]
    assert seen and max(seen) < min(positions)
    third_token = re.search(r'rel="next" href="\?older=(\d+)#f-timeline"', second)
    third = _timeline(client, older=third_token.group(1)) if third_token else ""
    every = positions + seen + [int(p) for p in re.findall(r'data-position="(\d+)"', third)]
    assert len(set(every)) == 60 and "Version 0 registered (1 allocation wanted)." in _texts(second + third)


def test_a_restart_starts_pauses_resumes_and_cancels_from_the_job_page(
    client: TestClient, store: EventStore
) -> None:
    _node(client, "node-a")
    _place(store, _job(client, store, "web", 2, rolling=False))
    for a in client.get("/v1/job/web/allocations").json():
        _report(store, a, "running", NOW, TaskEvent(type="Started", time=NOW))
    page = client.get(URL).text
    assert 'action="/ui/job/restart/web@default"' in page and "This job has not been restarted." in page
    token = _csrf(client, URL)
    form = {"batch_size": "1", "batch_wait": "30", "mode": "in-place", "on_error": "pause"}

    # Without the session's token: refused, nothing written.
    before = store.last_position()
    assert client.post("/ui/job/restart/web@default", data=form).status_code == 403
    assert (
        client.post("/ui/job/restart/web@default", data={**form, "csrf_token": "x" * 43}).status_code == 403
    )
    assert store.last_position() == before

    # Bad options: the command's refusal, every problem, and nothing written.
    r = client.post("/ui/job/restart/web@default", data={**form, "csrf_token": token, "batch_size": "0%",
                                                         "group": "nope"})  # fmt: skip
    assert "BatchSize must be at least 1" in r.text and "Group &#39;nope&#39; is not a task group" in r.text
    assert store.last_position() == before

    r = client.post("/ui/job/restart/web@default", data={**form, "csrf_token": token}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/jobs/web@default#f-restart"
    (restart,) = client.get("/v1/job/web/restarts").json()
    assert restart["BatchWait"] == 30 * 10**9 and restart["Status"] == "running"
    frag = client.get(URL, params={"fragment": "restart"}).text
    assert 'data-restart-status="running"' in frag and 'data-restarted="0" data-total="2"' in frag
    assert "0 of 2 done" in frag and "Pause restart" in frag
    assert 'data-topics="Allocation:web Deployment:web Job:web JobRestart:web"' in client.get(URL).text

    # The watcher signals the first batch: the progress moves.
    reads = Reads(store)
    step = watch_job_restart(reads.job_restart(restart["ID"]), reads.job("default", "web"),
                             reads.job_allocs("default", "web"), NOW)  # fmt: skip
    store.append(step.events)
    frag = client.get(URL, params={"fragment": "restart"}).text
    assert 'data-restarted="1" data-total="2"' in frag and "(batch 1 in flight)" in frag

    # Pause, resume, cancel: each its command, each needing the token.
    assert (
        client.post("/ui/job/restart-pause/web@default", data={"restart": restart["ID"]}).status_code == 403
    )
    client.post("/ui/job/restart-pause/web@default", data={"csrf_token": token, "restart": restart["ID"]})
    assert client.get(f"/v1/job/web/restart/{restart['ID']}").json()["Status"] == "paused"
    frag = client.get(URL, params={"fragment": "restart"}).text
    assert "Resume restart" in frag and "Pause restart" not in frag
    client.post("/ui/job/restart-resume/web@default", data={"csrf_token": token, "restart": restart["ID"]})
    assert client.get(f"/v1/job/web/restart/{restart['ID']}").json()["Status"] == "running"
    # Resuming a running one is refused, in the command's words.
    r = client.post(
        "/ui/job/restart-resume/web@default", data={"csrf_token": token, "restart": restart["ID"]}
    )
    assert "only a paused one resumes" in r.text
    before = store.last_position()
    assert (
        client.post("/ui/job/restart-cancel/web@default", data={"restart": restart["ID"]}).status_code == 403
    )
    assert store.last_position() == before
    client.post("/ui/job/restart-cancel/web@default", data={"csrf_token": token, "restart": restart["ID"]})
    assert client.get(f"/v1/job/web/restart/{restart['ID']}").json()["Status"] == "cancelled"
    frag = client.get(URL, params={"fragment": "restart"}).text
    assert "Cancelled by an operator" in frag and 'action="/ui/job/restart/web@default"' in frag

    # The timeline tells it all.
    texts = _texts(_timeline(client))
    for said in ("Job restart started: batches of 1, 30s between batches, restarting tasks in place.",
                 "Job restart batch 1: 1 allocation signalled.", "Job restart paused: Paused by an operator.",
                 "Job restart resumed.", "Job restart cancelled: Cancelled by an operator."):  # fmt: skip
        assert said in texts, texts


def test_the_alloc_page_shows_its_reschedule_chain_and_placement_metrics(
    client: TestClient,
    store: EventStore,
) -> None:
    _node(client, "node-a")
    _node(client, "node-b")
    body = _rescheduling("web", 1)
    body["Job"]["TaskGroups"][0]["Networks"] = [{"DynamicPorts": [{"Label": "http"}]}]
    assert client.put("/v1/jobs", json=body).status_code == 200
    _place(store, client.get("/v1/job/web/evaluations").json()[0]["ID"])
    first = client.get("/v1/job/web/allocations").json()[0]
    died = TaskEvent(
        type="Terminated", time=NOW - 60 * 10**9, display_message="Exit Code: 3", details={"exit_code": "3"}
    )
    _report(store, first, "failed", NOW - 60 * 10**9, died)
    reads = Reads(store)
    retry = job_eval(reads.job("default", "web"), "alloc-failure", NOW)
    store.append([EvalsUpserted(evals=[retry])])
    _place(store, retry.id)
    second = next(a for a in client.get("/v1/job/web/allocations").json() if a["ID"] != first["ID"])

    page = client.get(f"/ui/allocations/{second['ID']}").text
    chain = page[page.index("Reschedule chain") :]
    assert f'href="/ui/allocations/{first["ID"]}"' in chain and "attempt 1" in chain
    assert first["ID"][:8] in chain and 'aria-current="true"' in chain
    # The metrics name the clients scored, with their scores, and the one chosen.
    assert "Top-scoring clients" in page and re.search(
        r">node-[ab]</a> <span class=\"badge\">chosen</span>", page
    )
    old = client.get(f"/ui/allocations/{first['ID']}").text
    assert f'href="/ui/allocations/{second["ID"]}"' in old[old.index("Reschedule chain") :]
    # Its task's events in full (the details too), its address and ports.
    assert re.search(r"<td>Terminated</td><td>Exit Code: 3 <span class=\"muted\">exit_code=3</span>", old)
    port = second["AllocatedResources"]["Shared"]["Ports"][0]["Value"]
    assert f"<td>http</td><td><code>127.0.0.1:{port}</code>" in page
    assert "Network <code>host</code> at <code>127.0.0.1</code>" in page

    # Restart and stop: each its command, with the token.
    _report(store, second, "running", NOW, TaskEvent(type="Started", time=NOW))
    token = _csrf(client, f"/ui/allocations/{second['ID']}")
    assert client.post(f"/ui/allocation/restart/{second['ID']}", data={}).status_code == 403
    r = client.post(f"/ui/allocation/restart/{second['ID']}", data={"csrf_token": token})
    assert "Restart requested" in r.text and reads.alloc(second["ID"]).restart_request is not None


def test_a_blocked_eval_names_its_exhausted_clients(client: TestClient, store: EventStore) -> None:
    _node(client, "node-a")
    _node(client, "node-b")
    client.put("/v1/node/node-b/eligibility", json={"Eligibility": "ineligible"})
    # Three of 3 GB on an 8 GB client: two fit, the third waits, blocked on memory.
    eval_id = _job(client, store, "big", 3, mem=3000, rolling=False)
    state = store.replay()
    res = schedule(state, state.eval(eval_id), NOW)
    assert res.blocked_eval is not None
    store.append(
        [
            plan_applied_event(evaluate_plan(state, res.plan), NOW),
            EvalsUpserted(evals=[res.eval, res.blocked_eval]),
        ]
    )
    blocked = [e for e in client.get("/v1/job/big/evaluations").json() if e["Status"] == "blocked"]
    assert blocked, client.get("/v1/job/big/evaluations").json()
    overview = client.get("/ui/").text
    assert re.search(r"web could not be placed \(1 evaluated, 0 filtered, 1 exhausted: 1 out of <code>memory</code>\)",
                     overview), overview  # fmt: skip
    assert 'hx-get="/ui/?fragment=exhausted"' in overview
    # Asked for (the details opened): each client named under its reason.
    why = client.get("/ui/", params={"fragment": "exhausted"}).text
    assert re.search(r"<h4>1 client: <code>exhausted: out of memory</code></h4>\s*<ul[^>]*><li>"
                     r"<a href=\"/ui/nodes/node-a\"", why), why  # fmt: skip
    assert re.search(
        r"<code>ineligible for scheduling</code></h4>\s*<ul[^>]*><li><a href=\"/ui/nodes/node-b\"", why
    )
    assert "0 of 2 clients pass the job's constraints for group <code>web</code> and have room" in why
    # The job's page judges the blocked group the same way.
    why = client.get("/ui/jobs/big@default", params={"fragment": "why", "group": "web"}).text
    assert "exhausted: out of memory" in why


def test_restart_controls_ask_for_alloc_lifecycle(
    client: TestClient, store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without `alloc-lifecycle` (Nomad's capability for restarts) the form and buttons are not
    shown and their posts are refused."""
    from drover.api.ui import access

    _node(client, "node-a")
    _place(store, _job(client, store, "web", 1, rolling=False))
    token = _csrf(client, URL)
    asked: list[str] = []

    def no_lifecycle(request: Any, capability: str, namespace: str = "default") -> bool:
        asked.append(capability)
        return capability != "alloc-lifecycle"

    monkeypatch.setattr(access, "may", no_lifecycle)
    page = client.get(URL).text
    assert "/ui/job/restart/" not in page and "/ui/job/stop/" in page
    before = store.last_position()
    r = client.post("/ui/job/restart/web@default", data={"csrf_token": token, "batch_size": "1"})
    assert r.status_code == 403 and store.last_position() == before
    assert "alloc-lifecycle" in asked


def test_the_timeline_tells_a_deployment_started_and_failed(client: TestClient, store: EventStore) -> None:
    _node(client, "node-a")
    _place(store, _job(client, store, "web", 2))  # an update block: a deployment
    (dep,) = client.get("/v1/job/web/deployments").json()
    token = _csrf(client, URL)
    client.post(f"/ui/deployment/fail/{dep['ID']}", data={"csrf_token": token, "job": "web@default"})
    texts = _texts(_timeline(client))
    assert "Deployment started for version 0." in texts
    assert any(t.startswith("Deployment failed") for t in texts), texts
    assert texts.index("Deployment started for version 0.") > next(
        i for i, t in enumerate(texts) if t.startswith("Deployment failed")
    )
