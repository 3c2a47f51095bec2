"""GET /v1/event/stream on real NATS JetStream and PostgreSQL: Nomad's client reads it, a
resumed subscriber gets every event once, from any index, and the filters hold."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import nomad
import pytest

from drover.model import Node
from drover.model.events import NodeEligibilityUpdated, NodeRegistered
from drover.model.streamevents import has_stream_events
from drover.runtime.embedded import wait_for_port
from drover.runtime.store import EventStore

from .cluster import Cluster, job_json, node_json


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path).start()
    yield c
    c.stop()


@pytest.fixture
def feed(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    """The relay and the API alone (the log is written by the test), a small per-connection
    buffer and heartbeats every half second."""
    env = {"DROVER_EVENT_BUFFER": "64", "DROVER_EVENT_HEARTBEAT": "0.5"}
    c = Cluster(database_url, nats_url, tmp_path, env=env)
    try:
        c.spawn("relay")
        c.spawn("api")
        wait_for_port(c.port, 60, proc=c.procs["api"][0])
        yield c
    finally:
        c.stop()


def url(c: Cluster) -> str:
    return f"http://127.0.0.1:{c.port}/v1/event/stream"


def read(c: Cluster, until: int, timeout: float = 30.0, **params: Any) -> list[dict[str, Any]]:
    """Every line of a stream up to the first frame at or past position `until`."""
    lines: list[dict[str, Any]] = []
    with httpx.stream("GET", url(c), params=params, timeout=timeout) as r:
        assert r.status_code == 200, r.read()
        deadline = time.monotonic() + timeout
        for line in r.iter_lines():
            lines.append(json.loads(line))
            if lines[-1].get("Index", 0) >= until or "Error" in lines[-1]:
                return lines
            assert time.monotonic() < deadline, lines[-3:]
    raise AssertionError(f"the stream ended before {until}: {lines[-3:]}")


def frames(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in lines if f]


def marker(store: EventStore, name: str) -> int:
    """A position the stream certainly shows (a node registered)."""
    return store.append([NodeRegistered(node=Node(id=name))])[-1].position


def test_python_nomad_sees_a_job_registered_and_placed(cluster: Cluster) -> None:
    c = cluster
    c.put("/v1/drover/node/register", {"Node": node_json("n1")})
    client = nomad.Nomad(host="127.0.0.1", port=c.port, timeout=60)
    thread, stop, events = client.event.stream.get_stream(index=1)
    thread.daemon = True
    thread.start()
    c.put("/v1/jobs", job_json("web", 2))
    seen: set[tuple[str, str]] = set()
    wanted = {("Job", "JobRegistered"), ("Allocation", "PlanResult"), ("Evaluation", "EvaluationUpdated")}
    deadline = time.monotonic() + 30
    while not wanted <= seen:
        msg = events.get(timeout=max(deadline - time.monotonic(), 0.1))
        for event in msg["Events"]:
            seen.add((event["Topic"], event["Type"]))
            if event["Topic"] == "Allocation" and event["Type"] == "PlanResult":
                assert event["Payload"]["Allocation"]["JobID"] == "web"
                assert event["Key"] == event["Payload"]["Allocation"]["ID"]
                assert "web" in event["FilterKeys"]
        assert time.monotonic() < deadline, seen
    stop.set()


def test_a_resumed_subscriber_gets_every_event_once_in_order(cluster: Cluster, store: EventStore) -> None:
    c = cluster
    for i in range(3):
        c.put("/v1/drover/node/register", {"Node": node_json(f"n{i}")})
    c.put("/v1/jobs", job_json("web", 6, rolling=False))
    c.wait(lambda: len(c.get("/v1/job/web/allocations")) == 6)
    c.put("/v1/job/web/scale", {"Count": 3, "Target": {"Group": "web"}})
    end = marker(store, "end")

    whole = frames(read(c, end, index=1))
    indexes = [f["Index"] for f in whole]
    assert indexes == sorted(set(indexes)), "in order, each position once"
    # Every position of the log whose event the stream carries, and only those.
    logged = [r.position for r in store.read(0, end) if has_stream_events(r.event.type)]
    assert indexes == logged
    # A subscriber that stops half-way and resumes after its last index.
    half = whole[len(whole) // 2]["Index"]
    first = frames(read(c, half, index=1))
    rest = frames(read(c, end, index=first[-1]["Index"] + 1))
    assert first + rest == whole
    # Live: a subscriber from now sees what comes next, and only that.
    with httpx.stream("GET", url(c), timeout=30) as r:
        lines = r.iter_lines()
        assert json.loads(next(lines)) == {}
        nxt = marker(store, "next")
        got = json.loads(next(lines))
    assert got["Index"] == nxt
    assert [(e["Topic"], e["Type"], e["Key"]) for e in got["Events"]] == [
        ("Node", "NodeRegistration", "next")
    ]


def test_from_index_one_on_a_large_log(feed: Cluster, store: EventStore) -> None:
    nodes = 50
    store.append([NodeRegistered(node=Node(id=f"n{i}")) for i in range(nodes)])
    total = 20_000  # twenty of the stream's read batches (READ_BATCH)
    for start in range(0, total, 1000):
        store.append(
            [
                NodeEligibilityUpdated(
                    node_id=f"n{i % nodes}", eligibility="ineligible" if i % 2 else "eligible"
                )
                for i in range(start, start + 1000)
            ]
        )
    end = store.last_position()
    t0 = time.monotonic()
    got = frames(read(feed, end, timeout=120, index=1))
    took = time.monotonic() - t0
    assert [f["Index"] for f in got] == list(range(1, end + 1)), "every position once, in order"
    # Each document is as it was at its position.
    for f in got[nodes:]:
        (event,) = f["Events"]
        i = f["Index"] - nodes - 1
        assert event["Payload"]["Node"]["SchedulingEligibility"] == ("ineligible" if i % 2 else "eligible")
        assert event["Payload"]["Node"]["ModifyIndex"] == f["Index"]
    print(f"{end} positions from index 1 in {took:.1f}s")


def test_topic_and_key_filters(feed: Cluster, store: EventStore) -> None:
    from drover.model import Allocation, Evaluation, Job
    from drover.model.events import EvalsUpserted, JobRegistered, PlanApplied

    store.append(
        [
            JobRegistered(job=Job(id="web")),
            JobRegistered(job=Job(id="api")),
            JobRegistered(job=Job(id="batch", namespace="prod")),
            EvalsUpserted(evals=[Evaluation(id="e-web", job_id="web"), Evaluation(id="e-api", job_id="api")]),
            PlanApplied(
                eval_id="e-web", job_id="web", allocs=[Allocation(id="a-web", job_id="web", node_id="n")]
            ),
        ]
    )
    marker(store, "end")

    def keys(*topics: str, namespace: str | None = None) -> list[tuple[str, str]]:
        params: dict[str, Any] = {"index": 1, "topic": list(topics)}
        if namespace:
            params["namespace"] = namespace
        return [(e["Topic"], e["Key"]) for f in frames(_all(feed, params)) for e in f["Events"]]

    assert keys("Job") == [("Job", "web"), ("Job", "api")]
    assert keys("Job:api") == [("Job", "api")]
    assert keys("Job", namespace="prod") == [("Job", "batch")]
    assert keys("Job", namespace="*") == [("Job", "web"), ("Job", "api"), ("Job", "batch")]
    # A key matches an event's Key or any of its FilterKeys (an eval's or alloc's job).
    assert keys("Evaluation:web", "Allocation:web") == [("Evaluation", "e-web"), ("Allocation", "a-web")]
    assert keys("*:web") == [("Job", "web"), ("Evaluation", "e-web"), ("Allocation", "a-web")]
    assert keys("*") == [
        ("Job", "web"),
        ("Job", "api"),
        ("Evaluation", "e-web"),
        ("Evaluation", "e-api"),
        ("Allocation", "a-web"),
        ("Node", "end"),
    ]


def _all(c: Cluster, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every frame of a stream up to its first quiet heartbeat: everything logged before the
    request was sent by then (a filtered stream may show nothing at the log's end)."""
    with httpx.stream("GET", url(c), params=params, timeout=10) as r:
        assert r.status_code == 200
        lines = r.iter_lines()
        assert json.loads(next(lines)) == {}
        return list(itertools.takewhile(bool, (json.loads(line) for line in lines)))


def test_every_problem_with_a_query_in_one_400(feed: Cluster, store: EventStore) -> None:
    before = store.last_position()
    r = feed.http.get("/v1/event/stream", params={"index": "-1", "topic": ["Job:a:b", "Jobs", "Node"]})
    assert r.status_code == 400
    assert r.text.splitlines() == [
        "Invalid index: a non-negative integer",
        "Invalid topic 'Job:a:b': expected Topic or Topic:Key",
        "Unknown topic 'Jobs': one of Job, Evaluation, Allocation, Deployment, Node, JobRestart, Service, NodePool, *",
    ]
    assert store.last_position() == before


def test_a_subscriber_that_falls_behind_is_closed_and_resumes_without_a_loss(
    feed: Cluster, store: EventStore
) -> None:
    store.append([NodeRegistered(node=Node(id="n"))])
    # Not gzipped: compressed, what the sockets' buffers hold is several times as many frames.
    plain = {"Accept-Encoding": "identity"}
    with httpx.stream("GET", url(feed), params={"index": 0}, headers=plain, timeout=30) as r:
        assert "content-encoding" not in r.headers
        lines = r.iter_lines()
        assert json.loads(next(lines)) == {}
        # Far more than the buffer (64 frames) and the sockets' buffers hold, unread.
        for start in range(0, 20_000, 1000):
            store.append(
                [
                    NodeEligibilityUpdated(node_id="n", eligibility="eligible")
                    for _ in range(start, start + 1000)
                ]
            )
        end = store.last_position()
        got = [json.loads(line) for line in lines]
    assert got[-1] == {"Error": "subscription closed by server, client must reset state and resubscribe"}
    # Heartbeats may come between frames: an append of 1,000 events can take over half a second.
    sent = frames(got[:-1])
    last = sent[-1]["Index"]
    assert last < end
    rest = frames(read(feed, end, index=last + 1, timeout=120))
    assert [f["Index"] for f in sent] + [f["Index"] for f in rest] == list(range(2, end + 1))


def test_heartbeats_at_connect_and_while_quiet(feed: Cluster, store: EventStore) -> None:
    with httpx.stream("GET", url(feed), timeout=10) as r:
        assert r.headers["content-type"] == "application/json"
        # httpx asks for gzip, as most clients do, and gets it as each line is sent.
        assert r.headers["content-encoding"] == "gzip"
        lines = r.iter_lines()
        t0 = time.monotonic()
        assert [json.loads(next(lines)) for _ in range(3)] == [{}, {}, {}]
        assert time.monotonic() - t0 >= 0.9  # the connect's, then one every 0.5 s
        at = marker(store, "n")
        got = next(f for f in (json.loads(line) for line in lines) if f)
    assert got["Index"] == at


def test_a_replay_meets_the_live_feed_while_the_log_grows(feed: Cluster, store: EventStore) -> None:
    """A subscriber from index 1 while events keep coming: from the log, then the feed, closed
    whenever it falls 64 frames behind and resumed from its last index; every position once."""
    store.append([NodeRegistered(node=Node(id="n"))])

    def grow() -> None:
        for _ in range(40):
            store.append([NodeEligibilityUpdated(node_id="n", eligibility="eligible") for _ in range(250)])
            time.sleep(0.01)

    for _ in range(20):
        store.append([NodeEligibilityUpdated(node_id="n", eligibility="ineligible") for _ in range(500)])
    writer = threading.Thread(target=grow)
    writer.start()
    seen: list[int] = []
    closed = 0
    try:
        while not seen or seen[-1] < 20_001:
            lines = read(feed, 20_001, timeout=120, index=(seen[-1] + 1) if seen else 1)
            closed += "Error" in lines[-1]
            seen += [f["Index"] for f in frames(lines) if "Index" in f]
    finally:
        writer.join()
    assert seen == list(range(1, 20_001 + 1))
    print(f"closed {closed} times for falling behind")
