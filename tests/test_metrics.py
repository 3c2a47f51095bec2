"""GET /v1/metrics on a whole cluster: Prometheus text that prometheus_client's parser reads,
metrics that move as jobs are placed and run, every service's own metrics, and Nomad's JSON."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from .cluster import Cluster, job_json, node_json

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path).start()
    yield c
    c.stop()


def scrape(c: Cluster, **params: str) -> Samples:
    r = c.http.get("/v1/metrics", params=params)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    # Only this cluster's processes: one of an earlier test's may still be in the bucket, its
    # snapshot kept until the TTL runs out.
    ours = {str(p.pid) for procs in c.procs.values() for p in procs}
    out: Samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            if s.labels.get("instance", next(iter(ours))) in ours:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, lb), v in samples.items() if n == name and want <= set(lb))


def of(c: Cluster, service: str) -> set[str]:
    """The instance labels of the processes the test started for `service`."""
    return {str(p.pid) for p in c.procs[service]}


def test_metrics_parse_and_move_as_jobs_are_placed(cluster: Cluster) -> None:
    c = cluster
    before = scrape(c)
    assert value(before, "drover_allocs") == 0
    position = value(before, "drover_log_position")

    for i in range(3):
        c.put("/v1/drover/node/register", {"Node": node_json(f"node-{i}")})
    c.put("/v1/jobs", job_json("web", 6))
    c.wait(lambda: value(scrape(c), "drover_allocs", client_status="pending") == 6)
    s = scrape(c)
    assert value(s, "drover_nodes", status="ready") == 3
    assert value(s, "drover_evals", status="complete", triggered_by="job-register") == 1
    assert value(s, "drover_log_position") > position

    # A client reports its allocs running: the metrics follow.
    allocs = c.get("/v1/job/web/allocations")
    updates = [{"ID": a["ID"], "ClientStatus": "running"} for a in allocs[:4]]
    c.put("/v1/drover/allocs/status", {"Updates": updates})
    s = scrape(c)
    assert value(s, "drover_allocs", client_status="running") == 4
    assert value(s, "drover_allocs", client_status="pending") == 2

    # Every service publishes its own metrics within a few seconds: the planner's placements
    # and apply latency, the relay's lag, each replica's position and lag, the broker's queue.
    planner = of(c, "planner")

    def published() -> Samples | None:
        s = scrape(c)
        return s if value(s, "drover_plan_placements_total") >= 6 else None

    s = c.wait(published, timeout=15, interval=0.5)
    assert value(s, "drover_plan_apply_seconds_count") >= 1
    assert {dict(lb)["instance"] for (n, lb) in s if n == "drover_plan_apply_seconds_count"} <= planner
    assert ("drover_plan_queue_depth", (("instance", planner.pop()), ("service", "planner"))) in s
    head = value(s, "drover_log_position")

    def replicas_current() -> Samples | None:
        s = scrape(c)
        relay = [
            v
            for (n, lb), v in s.items()
            if n == "drover_relay_position" and dict(lb)["instance"] in of(c, "relay")
        ]
        seen = {
            (dict(lb)["service"], dict(lb)["instance"])
            for (n, lb), v in s.items()
            if n == "drover_replica_position" and v >= head
        }
        wanted = {(svc, pid) for svc in ("broker", "worker", "planner", "leader", "gc") for pid in of(c, svc)}
        # Standbys have no replica; every leader and every worker and broker does.
        return (
            s
            if relay
            and relay[0] >= head
            and {"broker", "worker", "planner"} <= {sv for sv, _ in seen}
            and seen <= wanted
            else None
        )

    s = c.wait(replicas_current, timeout=15, interval=0.5)
    assert value(s, "drover_relay_lag", service="relay") == 0
    assert all(v == 0 for (n, lb), v in s.items() if n == "drover_replica_lag")
    for state in ("ready", "unacked", "blocked", "waiting"):
        for lane in ("small", "large"):
            assert ("drover_broker_queue", lane, state) in {
                (n, dict(lb).get("lane"), dict(lb).get("state")) for (n, lb) in s
            }
    assert value(s, "drover_broker_queue") == 0  # nothing left to schedule

    # The API's own request latency, by route template.
    assert value(s, "drover_http_request_seconds_count", method="PUT", route="/v1/jobs") == 1
    assert (
        value(s, "drover_http_request_seconds_count", method="GET", route="/v1/job/{job_id:path}/allocations")
        >= 1
    )
    assert value(s, "drover_http_request_seconds_bucket", method="PUT", route="/v1/jobs", le="+Inf") == 1


def test_the_broker_queue_shows_an_eval_that_cannot_be_placed(cluster: Cluster) -> None:
    c = cluster
    c.put("/v1/drover/node/register", {"Node": node_json("small", cpu=1000)})
    c.put("/v1/jobs", job_json("big", 1, cpu=4000))

    def blocked() -> Samples | None:
        s = scrape(c)
        return s if value(s, "drover_broker_queue", state="blocked") == 1 else None

    s = c.wait(blocked, timeout=15, interval=0.5)
    assert value(s, "drover_evals", status="blocked", triggered_by="queued-allocs") == 1
    assert value(s, "drover_broker_queue", lane="small", state="blocked") == 1


def test_nomad_json_form_and_an_unknown_format_refused(cluster: Cluster) -> None:
    c = cluster
    c.put("/v1/drover/node/register", {"Node": node_json("n1")})
    c.put("/v1/jobs", job_json("web", 2))

    def placed() -> dict[str, object] | None:
        doc = c.get("/v1/metrics", format="json")
        counters = [
            x
            for x in doc["Counters"]
            if x["Name"] == "drover.plan.placements" and x["Labels"]["instance"] in of(c, "planner")
        ]
        return doc if counters and counters[0]["Sum"] == 2 else None

    doc = c.wait(placed, timeout=15, interval=0.5)
    assert set(doc) == {"Timestamp", "Gauges", "Points", "Counters", "Samples"}
    assert doc["Timestamp"].endswith("+0000 UTC")
    gauges = {(g["Name"], tuple(sorted(g["Labels"].items()))): g["Value"] for g in doc["Gauges"]}
    assert gauges[("drover.allocs", (("client_status", "pending"),))] == 2
    assert gauges[("drover.nodes", (("status", "ready"),))] == 1
    # A process of an earlier test's cluster may still be in the bucket until its TTL runs out.
    planner = of(c, "planner")
    apply = [
        x for x in doc["Samples"] if x["Name"] == "drover.plan.apply" and x["Labels"]["instance"] in planner
    ]
    assert len(apply) == 1 and apply[0]["Count"] == 1 and apply[0]["Labels"]["service"] == "planner"
    sample = apply[0]
    assert set(sample) == {"Name", "Count", "Rate", "Sum", "Min", "Max", "Mean", "Stddev", "Labels"}
    # Milliseconds, as Nomad's samples: one plan's apply took its Sum, between Min and Max.
    assert 0 < sample["Min"] == sample["Max"] == sample["Sum"] == sample["Mean"] < 10_000
    register = [
        x for x in doc["Samples"] if x["Name"] == "drover.http.request" and x["Labels"]["route"] == "/v1/jobs"
    ]
    assert register and register[0]["Labels"]["method"] == "PUT"

    r = c.http.get("/v1/metrics", params={"format": "xml"})
    assert r.status_code == 400
    assert "format must be one of prometheus, json" in r.text
