"""End to end with every service as its own process, on real NATS JetStream and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .cluster import Cluster, job_json, node_json


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path).start()
    yield c
    c.stop()


def live(c: Cluster, job_id: str) -> list[dict[str, object]]:
    return [
        a
        for a in c.get(f"/v1/job/{job_id}/allocations")
        if a["DesiredStatus"] == "run" and a["ClientStatus"] not in ("complete", "failed", "lost")
    ]


def test_register_scale_deregister(cluster: Cluster) -> None:
    c = cluster
    for i in range(5):
        c.put("/v1/drover/node/register", {"Node": node_json(f"node-{i}")})
    t0 = time.monotonic()
    resp = c.put("/v1/jobs", job_json("web", 10, rolling=False))
    c.wait(lambda: len(live(c, "web")) == 10, timeout=10)
    placed_after = time.monotonic() - t0
    evaluation = c.wait(
        lambda: (e := c.get(f"/v1/evaluation/{resp['EvalID']}"))["Status"] == "complete" and e
    )
    assert evaluation["Status"] == "complete"
    assert placed_after < 2.0, f"10 allocs took {placed_after:.2f}s"
    names = sorted(a["Name"] for a in live(c, "web"))
    assert names == sorted(f"web.web[{i}]" for i in range(10))
    assert c.get("/v1/job/web")["Status"] == "running"
    assert [j["Status"] for j in c.get("/v1/jobs", prefix="web")] == ["running"]

    c.put("/v1/job/web/scale", {"Count": 20, "Target": {"Group": "web"}})
    c.wait(lambda: len(live(c, "web")) == 20)
    c.put("/v1/job/web/scale", {"Count": 5, "Target": {"Group": "web"}})
    c.wait(lambda: len(live(c, "web")) == 5)
    assert sorted(a["Name"] for a in live(c, "web")) == sorted(f"web.web[{i}]" for i in range(5))

    r = c.http.delete("/v1/job/web")
    assert r.status_code == 200
    c.wait(lambda: live(c, "web") == [])
    c.wait(lambda: c.get("/v1/job/web")["Status"] == "dead")

    # A plan of many placements travels in columns, its metrics as JSON the plan applier
    # passes on undecoded (drover.scheduler.wire): each alloc still shows its own.
    c.put("/v1/jobs", job_json("many", 20))
    c.wait(lambda: len(live(c, "many")) == 20)
    for a in live(c, "many"):
        metrics = c.get(f"/v1/allocation/{a['ID']}")["Metrics"]
        assert metrics["NodesEvaluated"] > 0 and metrics["ScoreMetaData"], metrics


def test_blocked_job_is_placed_when_a_node_joins(cluster: Cluster) -> None:
    c = cluster
    c.put("/v1/drover/node/register", {"Node": node_json("small", cpu=1000)})
    resp = c.put("/v1/jobs", job_json("big", 1, cpu=3000))
    evaluation = c.wait(
        lambda: (e := c.get(f"/v1/evaluation/{resp['EvalID']}"))["Status"] == "complete" and e
    )
    assert evaluation["BlockedEval"], evaluation
    assert c.get(f"/v1/evaluation/{evaluation['BlockedEval']}")["Status"] == "blocked"
    assert live(c, "big") == []
    assert c.get("/v1/job/big")["Status"] == "pending"  # nothing placed, a blocked eval waits
    c.put("/v1/drover/node/register", {"Node": node_json("large", cpu=8000)})
    allocs = c.wait(lambda: live(c, "big"))
    assert allocs[0]["NodeID"] == "large"
    c.wait(lambda: c.get(f"/v1/evaluation/{evaluation['BlockedEval']}")["Status"] == "complete")


def test_a_blocked_job_is_placed_when_allocs_stop(cluster: Cluster) -> None:
    """The broker releases a blocked eval when allocs on its node class stop: one its client
    reports finished, and one a plan stops (the broker keeps only a record of each alloc)."""
    c = cluster
    c.put("/v1/drover/node/register", {"Node": node_json("only", cpu=1000)})
    first = job_json("first", 1, cpu=600)
    first["Job"]["Type"] = "batch"
    c.put("/v1/jobs", first)
    [done] = c.wait(lambda: live(c, "first"))

    def blocked(job_id: str) -> None:
        resp = c.put("/v1/jobs", job_json(job_id, 1, cpu=600))
        evaluation = c.wait(
            lambda: (e := c.get(f"/v1/evaluation/{resp['EvalID']}"))["Status"] == "complete" and e
        )
        assert evaluation["BlockedEval"] and live(c, job_id) == []

    blocked("second")
    c.put(
        "/v1/drover/allocs/status",
        {"NodeID": "only", "Updates": [{"ID": done["ID"], "ClientStatus": "complete"}]},
    )
    c.wait(lambda: live(c, "second"))
    blocked("third")
    assert c.http.delete("/v1/job/second").status_code == 200
    c.wait(lambda: live(c, "third"))


def test_a_cluster_that_cannot_start_leaves_no_process_behind(
    database_url: str, nats_url: str, tmp_path: Path
) -> None:
    """The harness itself: when the API cannot come up (here its port is taken), `start`
    stops every service it spawned before it fails."""
    import socket

    c = Cluster(database_url, nats_url, tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", c.port))
        with pytest.raises(RuntimeError, match="did not start"):
            c.start()
    procs = [p for ps in c.procs.values() for p in ps]
    assert len(procs) == sum(c.counts.values()) and all(p.poll() is not None for p in procs)
