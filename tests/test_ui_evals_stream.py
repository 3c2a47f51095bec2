"""The console's evaluation pages and event stream viewer over HTML (no browser): an eval's page
shows its related evals (the chain of previous, next and blocked evals, as `?related=true` on
/v1/evaluation/:id adds them), its failed placements and links to its job, deployment and node;
the evaluations list filters by namespace and links each eval; the viewer's form turns into the
subscription it streams, refusing bad input with every problem listed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from starlette.datastructures import QueryParams

from drover.api.app import create_app
from drover.api.ui.routes.stream import chosen
from drover.model import Evaluation
from drover.model.alloc import AllocMetric
from drover.model.events import EvalsUpserted
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore

from .cluster import job_json, node_json

NOW = 1_700_000_000_000_000_000
A, B, C, D = (f"{c * 8}-0000-0000-0000-000000000000" for c in "abcd")


@pytest.fixture
def client(database_url: str, store: EventStore) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url="nats://unused")
    with TestClient(create_app(settings, EventStore(database_url))) as c:
        yield c


def _chain(client: TestClient, store: EventStore) -> None:
    """A job's eval A failed to place (blocked eval B); B, unblocked, was followed by C. D is
    another job's, unrelated."""
    assert client.put("/v1/jobs", json=job_json("web", 2)).status_code == 200
    failed = AllocMetric(
        nodes_evaluated=3, nodes_in_pool=3, nodes_exhausted=3, dimension_exhausted={"memory": 3}
    )
    base = {"namespace": "default", "job_id": "web", "create_time": NOW, "modify_time": NOW}
    evals = [
        Evaluation(id=A, triggered_by="job-register", status="complete", blocked_eval=B,
                   failed_tg_allocs={"web": failed}, deployment_id="dep-1", create_index=1, **base),
        Evaluation(id=B, triggered_by="queued-allocs", status="complete", previous_eval=A, next_eval=C,
                   create_index=2, **base),
        Evaluation(id=C, triggered_by="node-update", status="pending", previous_eval=B, node_id="node-a",
                   create_index=3, **base),
        Evaluation(id=D, triggered_by="job-register", status="complete", namespace="other", job_id="api",
                   create_time=NOW, create_index=4),
    ]  # fmt: skip
    store.append([EvalsUpserted(evals=evals)])


def test_an_evals_page_shows_its_related_evals_failures_and_links(
    client: TestClient, store: EventStore
) -> None:
    _chain(client, store)
    r = client.get(f"/ui/evaluations/{B}")
    assert r.status_code == 200, r.text
    html = r.text
    # Its chain both ways (A before it, C after it); the other job's eval is no relation.
    assert f'data-related="{A}"' in html and f'data-related="{C}"' in html and D not in html
    assert 'href="/ui/jobs/web@default"' in html
    assert f'data-topics="Evaluation:{A} Evaluation:{B} Evaluation:{C}"' in html

    r = client.get(f"/ui/evaluations/{A}")
    assert 'data-failed-group="web"' in r.text and "3 out of <code>memory</code>" in r.text
    assert "dep-1"[:8] in r.text and "blocked" in r.text  # B is its blocked eval
    r = client.get(f"/ui/evaluations/{C}")
    assert 'href="/ui/nodes/node-a"' in r.text
    r = client.get(f"/ui/evaluations/{D}")
    assert "No related evaluations" in r.text and "(gone)" in r.text  # job `api` was never registered
    assert client.get("/ui/evaluations/nope").status_code == 404

    # The API's own answer: Nomad's RelatedEvals, stubs, oldest first.
    doc = client.get(f"/v1/evaluation/{C}", params={"related": "true"}).json()
    assert [e["ID"] for e in doc["RelatedEvals"]] == [A, B] and doc["ID"] == C
    assert set(doc["RelatedEvals"][0]) >= {"ID", "Status", "TriggeredBy", "NextEval", "BlockedEval"}
    assert "RelatedEvals" not in client.get(f"/v1/evaluation/{C}").json()


def test_the_evaluations_list_filters_by_namespace_and_links_each_eval(
    client: TestClient, store: EventStore
) -> None:
    _chain(client, store)
    every = client.get("/ui/evaluations").text
    assert all(f'href="/ui/evaluations/{i}"' in every for i in (A, B, C, D))
    other = client.get("/ui/evaluations", params={"namespace": "other"}).text
    assert f'href="/ui/evaluations/{D}"' in other and A not in other
    assert "<option selected>other</option>" in other
    pending = client.get("/ui/evaluations", params={"status": "pending"}).text
    assert C in pending and A not in pending and D not in pending


@pytest.mark.parametrize(
    ("query", "values", "problems"),
    [
        ("", [], 0),
        ("topic=*", ["*"], 0),
        ("topic=Job", ["Job"], 0),
        ("topic=Job&key.Job=web,+api", ["Job:web", "Job:api"], 0),
        ("topic=Job&topic=Node&key.Node=n1", ["Job", "Node:n1"], 0),
        ("topic=Nope&topic=Job&key.Job=a:b", [], 2),
        ("key.Job=web", [], 0),  # keys of a topic not ticked are not asked for
    ],
)
def test_the_viewers_form_is_the_subscription_it_streams(
    query: str, values: list[str], problems: int
) -> None:
    got, bad = chosen(QueryParams(query))
    assert got == values and len(bad) == problems, bad


def test_the_viewer_page_and_its_bad_input(client: TestClient) -> None:
    r = client.get(
        "/ui/stream", params=[("topic", "Job"), ("key.Job", "web"), ("namespace", "*"), ("index", "7")]
    )
    assert r.status_code == 200
    assert 'data-source="/ui/stream/events?topic=Job%3Aweb&amp;namespace=%2A"' in r.text
    assert 'data-from="7"' in r.text and 'src="/ui/static/stream.js"' in r.text
    assert 'href="/ui/stream" aria-current="page"' in r.text
    # Every problem listed at once, and nothing streamed.
    r = client.get("/ui/stream", params=[("topic", "Bogus"), ("index", "-1"), ("keep", "x")])
    assert r.status_code == 400 and 'data-off="true"' in r.text
    assert "Unknown topic" in r.text and "Invalid index" in r.text and "Invalid keep" in r.text
    assert client.get("/ui/stream/events", params={"topic": "Bogus"}).status_code == 400
    assert client.get("/ui/static/stream.js").status_code == 200


def test_tabs_refreshed_by_one_event_share_one_render_each_with_its_own_token(
    client: TestClient, store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What 100 tabs woken by one event cost: one read and one render of the fragment; each
    answer carries its own session's CSRF token (the shared render's placeholder never shows)."""
    from drover.api.ui import render

    rendered: list[str] = []
    wrap = render._wrap
    monkeypatch.setattr(render, "_wrap", lambda r, f, c: rendered.append(f.name) or wrap(r, f, c))
    assert client.put("/v1/drover/node/register", json={"Node": node_json("n1")}).status_code == 200
    assert client.put("/v1/jobs", json=job_json("web", 2, rolling=False)).status_code == 200
    url, at = "/ui/jobs/web@default", store.last_position()
    tabs = [TestClient(client.app) for _ in range(5)]
    answers = [t.get(url, params={"fragment": "summary", "at": at}).text for t in tabs]
    assert rendered == ["summary"]
    tokens = [t.cookies["drover_csrf"] for t in tabs]
    assert len(set(tokens)) == 5
    placeholder = client.app.state.ui_loads.placeholder
    for text, token in zip(answers, tokens, strict=True):
        assert f'value="{token}"' in text and placeholder not in text
        assert text.replace(token, "") == answers[0].replace(tokens[0], "")
    # A later event: read and rendered anew.
    client.put("/v1/job/web/scale", json={"Count": 3, "Target": {"Group": "web"}})
    fresh = tabs[0].get(url, params={"fragment": "summary", "at": store.last_position()}).text
    assert rendered == ["summary", "summary"] and "<td>3</td>" in fresh
