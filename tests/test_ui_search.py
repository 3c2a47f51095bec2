"""The console's search over HTML, in-process against a real PostgreSQL (no browser): the
header's box goes to /ui/search, which shows fuzzy matches and pasted ID prefixes grouped by
context, each a link to its page; the jobs list takes a Nomad filter expression, pages through
what passes, and shows a bad one's problem inline instead of failing."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.api.ui.routes import jobs as ui_jobs
from drover.model.events import EvalsUpserted
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore
from drover.scheduler import evaluate_plan, schedule
from drover.scheduler.planapply import plan_applied_event

from .cluster import node_json

NOW = 1_700_000_000_000_000_000


@pytest.fixture
def client(database_url: str, store: EventStore) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url="nats://unused")
    with TestClient(create_app(settings, EventStore(database_url))) as c:
        yield c


def place(store: EventStore, eval_id: str) -> None:
    state = store.replay()
    evaluation = state.eval(eval_id)
    assert evaluation is not None
    res = schedule(state, evaluation, NOW)
    store.append([plan_applied_event(evaluate_plan(state, res.plan), NOW), EvalsUpserted(evals=[res.eval])])


def job(job_id: str, owner: str = "ops", group: str = "g", namespace: str = "default") -> dict[str, Any]:
    task = {"Name": "server", "Driver": "mock", "Resources": {"CPU": 10, "MemoryMB": 16}}
    return {"Job": {"ID": job_id, "Namespace": namespace, "Datacenters": ["dc1"], "Meta": {"owner": owner},
                    "TaskGroups": [{"Name": group, "Count": 1, "Tasks": [task]}]}}  # fmt: skip


def register(client: TestClient, body: dict[str, Any]) -> str:
    r = client.put("/v1/jobs", json=body)
    assert r.status_code == 200, r.text
    return str(r.json()["EvalID"])


def links(page: str) -> list[tuple[str, str]]:
    """(href, text) of the result links, in order."""
    hits = page.split('id="f-results"', 1)[1]
    return [
        (html.unescape(h), html.unescape(t))
        for h, t in re.findall(r'<li><a href="([^"]+)">([^<]+)</a>', hits)
    ]


def test_the_header_searches_and_each_match_links_to_its_page(client: TestClient, store: EventStore) -> None:
    assert client.put("/v1/drover/node/register", json={"Node": node_json("payments-box")}).status_code == 200
    assert client.put("/v1/namespace/payments-eu", json={"Name": "payments-eu"}).status_code == 200
    eval_id = register(client, job("payments", group="ledger"))
    register(client, job("reports", group="payments-export", namespace="payments-eu"))
    place(store, eval_id)
    (alloc,) = client.get("/v1/allocations").json()

    home = client.get("/ui/").text
    assert '<form class="search" role="search" action="/ui/search" method="get">' in home
    r = client.get("/ui/search", params={"q": "PAYMENTS"})
    assert r.status_code == 200 and "<h1>Search</h1>" in r.text
    found = links(r.text)
    assert ("/ui/jobs/payments@default", "payments") in found
    assert ("/ui/jobs/reports@payments-eu", "payments-export") in found  # a group: its job's page
    assert ("/ui/nodes/payments-box", "payments-box") in found
    assert (f"/ui/allocations/{alloc['ID']}", "payments.ledger[0]") in found
    assert ("/ui/jobs?namespace=payments-eu", "payments-eu") in found
    for heading in ("Jobs", "Task groups", "Allocations", "Clients", "Namespaces"):
        assert "<h2 id=" in r.text and f'>{heading} <span class="badge">' in r.text
    # Grouped in the page's order: jobs before groups before allocs before clients.
    hrefs = [h for h, _ in found]
    assert hrefs.index("/ui/jobs/payments@default") < hrefs.index(f"/ui/allocations/{alloc['ID']}")
    assert hrefs.index(f"/ui/allocations/{alloc['ID']}") < hrefs.index("/ui/nodes/payments-box")

    # A pasted ID prefix finds its alloc, its eval (linked to the job's evaluations).
    found = links(client.get("/ui/search", params={"q": alloc["ID"][:8]}).text)
    assert (f"/ui/allocations/{alloc['ID']}", "payments.ledger[0]") in found
    found = links(client.get("/ui/search", params={"q": eval_id[:8]}).text)
    assert ("/ui/evaluations?q=payments&namespace=default", eval_id) in found

    assert "Nothing matches <strong>zzzz</strong>" in client.get("/ui/search", params={"q": "zzzz"}).text
    assert "Type at least 2 characters" in client.get("/ui/search", params={"q": "p"}).text
    assert "Type at least 2 characters" in client.get("/ui/search").text
    # Markup in the query is shown, never run.
    r = client.get("/ui/search", params={"q": "<script>x</script>"})
    assert r.status_code == 200 and "<script>x</script>" not in r.text


def test_the_jobs_list_takes_a_filter_expression(
    client: TestClient, store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(8):
        register(client, job(f"svc-{n}", owner="ops" if n % 2 == 0 else "dev", group=f"g{n}"))

    def names(page: str) -> list[str]:
        return re.findall(r'<tr data-job="([^"]+)"', page)

    page = client.get("/ui/jobs").text
    assert 'name="filter"' in page and "<label>Filter <input" in page
    assert names(client.get("/ui/jobs", params={"filter": 'Meta.owner == "dev"'}).text) == [
        "svc-1", "svc-3", "svc-5", "svc-7",
    ]  # fmt: skip
    assert names(client.get("/ui/jobs", params={"filter": "any TaskGroups as g { g.Name == g4 }"}).text) == [
        "svc-4"
    ]
    # With the other filters (q), and paged over what passes, both ways.
    monkeypatch.setattr(ui_jobs, "PER_PAGE", 2)
    monkeypatch.setattr(ui_jobs, "FILTER_BATCH", 3)
    first = client.get("/ui/jobs", params={"filter": "Meta.owner == ops"}).text
    assert names(first) == ["svc-0", "svc-2"] and 'rel="prev"' not in first
    after = html.unescape(re.search(r'rel="next" href="([^"]+)"', first).group(1))
    assert "filter=Meta.owner" in after
    second = client.get("/ui/jobs" + after).text
    assert names(second) == ["svc-4", "svc-6"] and 'rel="next"' not in second
    before = html.unescape(re.search(r'rel="prev" href="([^"]+)"', second).group(1))
    assert names(client.get("/ui/jobs" + before).text) == ["svc-0", "svc-2"]
    assert names(client.get("/ui/jobs", params={"filter": "Meta.owner == ops", "q": "svc-6"}).text) == [
        "svc-6"
    ]

    # A filter that does not parse, or cannot apply: its problem inline, the page still there.
    r = client.get("/ui/jobs", params={"filter": "Meta.owner =="})
    assert (
        r.status_code == 200
        and 'role="alert">The filter does not apply: column 14: expected a value' in r.text
    )
    assert names(r.text) == [] and 'value="Meta.owner =="' in r.text
    r = client.get("/ui/jobs", params={"filter": "Priority contains 5", "fragment": "jobs"})
    assert r.status_code == 200 and "Priority is an integer" in r.text
    assert r.text.startswith('<section id="f-jobs"')
