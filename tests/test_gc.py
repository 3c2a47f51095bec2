"""Garbage collection end to end: every service its own process, the collector's interval and
thresholds lowered to seconds. Terminal evals, dead jobs, old deployments and down nodes
disappear from the API on schedule while the log keeps their history and a rebuild equals the
projections; a failed alloc that may still be rescheduled stays; PUT /v1/system/gc forces a
collection (a purged job's evals and allocs go too); kill -9 of the active collector midway
leaves the standby to finish."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import text

from drover.model.durations import HOUR
from drover.runtime.store import EventStore

from .cluster import Cluster, job_json, node_json
from .test_heartbeats import Beater

HEARTBEATS = {
    "DROVER_HEARTBEAT_MIN_TTL": "1",
    "DROVER_HEARTBEAT_GRACE": "1",
    "DROVER_FAILOVER_HEARTBEAT_TTL": "6",
}
THRESHOLDS = ("EVAL", "BATCH_EVAL", "JOB", "DEPLOYMENT", "NODE")
SOON = {"DROVER_GC_INTERVAL": "1", "DROVER_GC_RESTART_THRESHOLD": "2"} | {
    f"DROVER_{t}_GC_THRESHOLD": "2" for t in THRESHOLDS
}
# Rescheduled an hour after it fails: meanwhile the failed alloc awaits its replacement.
LATER = {"Attempts": 3, "Interval": 24 * HOUR, "Delay": HOUR, "DelayFunction": "constant", "Unlimited": False}


def _cluster(database_url: str, nats_url: str, tmp_path: Path, env: dict[str, str], gcs: int = 1) -> Cluster:
    return Cluster(database_url, nats_url, tmp_path, gcs=gcs, env={**HEARTBEATS, **env}).start()


@contextlib.contextmanager
def _running(c: Cluster) -> Iterator[Beater]:
    """The cluster, with node n1 (dc1) registered and heartbeating and node "silent" (dc2)
    registered and left to go down; stopped after (its heartbeats first)."""
    beater = Beater(str(c.http.base_url))
    try:
        c.put("/v1/drover/node/register", {"Node": node_json("n1")})
        beater.nodes.add("n1")
        c.put("/v1/drover/node/register", {"Node": node_json("silent", dc="dc2")})
        yield beater
    finally:
        beater.close()
        c.stop()


def _gone(c: Cluster, path: str) -> bool:
    return c.http.get(path).status_code == 404


def _evals_of(c: Cluster, job_id: str) -> list[dict[str, Any]]:
    return [e for e in c.get("/v1/evaluations", namespace="*") if e["JobID"] == job_id]


def _report(c: Cluster, node_id: str, alloc_id: str, status: str) -> None:
    c.put(
        "/v1/drover/allocs/status", {"NodeID": node_id, "Updates": [{"ID": alloc_id, "ClientStatus": status}]}
    )


def _flaky(c: Cluster) -> dict[str, Any]:
    """A service job whose one alloc failed and awaits its reschedule (an hour away)."""
    job = job_json("flaky", 1, cpu=100)
    # No deployment: a failed alloc is not rescheduled during an active one (as
    # in Nomad).
    job["Job"]["TaskGroups"][0] |= {"ReschedulePolicy": LATER, "Update": {"MaxParallel": 0}}
    c.put("/v1/jobs", job)
    (alloc,) = c.wait(lambda: c.get("/v1/job/flaky/allocations"))
    _report(c, alloc["NodeID"], alloc["ID"], "failed")
    c.wait(
        lambda: any(e["WaitUntil"] for e in _evals_of(c, "flaky")),  # the follow-up
        describe=lambda: (_evals_of(c, "flaky"), c.get("/v1/job/flaky/allocations")),
    )
    return alloc


def _rebuild_equals(database_url: str) -> EventStore:
    store = EventStore(database_url)
    before = store.projection_dump()
    store.rebuild_projections()
    assert store.projection_dump() == before
    return store


def test_terminal_objects_disappear_on_schedule_and_the_log_keeps_them(
    database_url: str, nats_url: str, tmp_path: Path, js_fresh: object
) -> None:
    c = _cluster(database_url, nats_url, tmp_path, SOON)
    with _running(c):
        # A service job, stopped: its deployment is cancelled, its allocs stopped, it is dead.
        c.put("/v1/jobs", job_json("done", 2, cpu=100))
        done = c.wait(lambda: len(a := c.get("/v1/job/done/allocations")) == 2 and a)
        deployment = c.wait(lambda: c.get("/v1/job/done/deployment"))
        c.http.delete("/v1/job/done").raise_for_status()
        # A batch job that finished: dead without being stopped.
        batch = job_json("batch", 1, cpu=100)
        batch["Job"]["Type"] = "batch"
        c.put("/v1/jobs", batch)
        (finished,) = c.wait(lambda: c.get("/v1/job/batch/allocations"))
        _report(c, "n1", finished["ID"], "complete")
        flaky = _flaky(c)
        c.wait(lambda: c.get("/v1/node/silent")["Status"] == "down", timeout=15)

        # The periodic core evals run: what is old enough goes.
        c.wait(
            lambda: all(_gone(c, p) for p in ("/v1/job/done", "/v1/job/batch", "/v1/node/silent")),
            timeout=30,
            describe=lambda: [
                c.http.get(p).status_code for p in ("/v1/job/done", "/v1/job/batch", "/v1/node/silent")
            ],
        )
        for a in [*done, finished]:
            c.wait(lambda a=a: _gone(c, f"/v1/allocation/{a['ID']}"), timeout=10)
        c.wait(lambda: not _evals_of(c, "done") and not _evals_of(c, "batch"), timeout=10)
        c.wait(lambda: _gone(c, f"/v1/deployment/{deployment['ID']}"), timeout=10)
        core = c.wait(
            lambda: [
                e
                for e in c.get("/v1/evaluations", namespace="*")
                if e["Type"] == "_core" and e["Status"] == "complete"
            ]
        )
        assert {(e["TriggeredBy"], e["Namespace"], e["Priority"]) for e in core} == {
            ("scheduled", "-", 32767)
        }
        assert {e["JobID"] for e in core} <= {
            "eval-gc",
            "job-gc",
            "deployment-gc",
            "node-gc",
            "job-restart-gc",
        }
        # The failed alloc that may still be rescheduled stays, through more passes.
        time.sleep(3)
        kept = c.get(f"/v1/allocation/{flaky['ID']}")
        assert kept["ClientStatus"] == "failed" and not kept["NextAllocation"]
        assert c.get("/v1/job/flaky")["ID"] == "flaky" and _evals_of(c, "flaky")
        assert c.get("/v1/node/n1")["Status"] == "ready"
    # The log keeps their whole history, and the projections are what it rebuilds.
    store = _rebuild_equals(database_url)
    try:
        events = [r.event for r in store.iter_all()]
        registered = {e.job.id for e in events if e.type == "JobRegistered"}  # type: ignore[attr-defined]
        placed = {a.id for e in events if e.type == "PlanApplied" for a in e.allocs}  # type: ignore[attr-defined]
        collected = {a for e in events if e.type == "EvalsCollected" for a in e.allocs}  # type: ignore[attr-defined]
        assert {"done", "batch"} <= registered and {a["ID"] for a in [*done, finished]} <= placed & collected
        assert {e.job_id for e in events if e.type == "JobCollected"} == {"done", "batch"}  # type: ignore[attr-defined]
        assert any(e.type == "NodeRegistered" and e.node.id == "silent" for e in events)  # type: ignore[attr-defined]
        assert any(e.type == "NodesCollected" and e.nodes == ["silent"] for e in events)  # type: ignore[attr-defined]
        assert any(
            e.type == "DeploymentsCollected" and deployment["ID"] in e.deployments  # type: ignore[attr-defined]
            for e in events
        )
        assert flaky["ID"] not in collected
    finally:
        store.close()


def test_put_system_gc_forces_a_collection(
    database_url: str, nats_url: str, tmp_path: Path, js_fresh: object
) -> None:
    c = _cluster(database_url, nats_url, tmp_path, {})  # Nomad's thresholds: nothing is old enough
    with _running(c):
        for job_id in ("web", "purged"):
            c.put("/v1/jobs", job_json(job_id, 2, cpu=100))
        web = c.wait(lambda: len(a := c.get("/v1/job/web/allocations")) == 2 and a)
        purged = c.wait(lambda: len(a := c.get("/v1/job/purged/allocations")) == 2 and a)
        purged_evals = c.wait(lambda: _evals_of(c, "purged"))
        c.http.delete("/v1/job/web").raise_for_status()
        c.http.delete("/v1/job/purged", params={"purge": "true"}).raise_for_status()
        flaky = _flaky(c)
        c.wait(lambda: c.get("/v1/node/silent")["Status"] == "down", timeout=15)
        stopped = [*web, *purged]
        c.wait(lambda: all(c.get(f"/v1/allocation/{a['ID']}")["DesiredStatus"] == "stop" for a in stopped))
        c.wait(lambda: all(e["Status"] != "pending" for e in _evals_of(c, "web") + _evals_of(c, "purged")))
        # Nothing is old enough for Nomad's thresholds (nor is a periodic pass due yet).
        assert c.get("/v1/job/web")["Stop"] and not _gone(c, "/v1/node/silent")

        index = int(c.http.get("/v1/evaluations").headers["X-Nomad-Index"])
        r = c.http.put("/v1/system/gc")
        assert (r.status_code, r.content) == (200, b"")  # Nomad answers at once, with no body
        forced = c.wait(
            lambda: [e for e in c.get("/v1/evaluations", namespace="*") if e["JobID"] == "force-gc"]
        )
        assert forced[0]["CreateIndex"] > index
        (done,) = c.wait(lambda: [e for e in c.get("/v1/evaluations", namespace="*") if e["JobID"] == "force-gc" and e["Status"] == "complete"], timeout=20)  # fmt: skip
        assert (done["Type"], done["TriggeredBy"], done["Namespace"]) == ("_core", "scheduled", "-")
        assert _gone(c, "/v1/job/web") and _gone(c, "/v1/node/silent")
        assert all(_gone(c, f"/v1/allocation/{a['ID']}") for a in stopped)
        assert not _evals_of(c, "web") and not _evals_of(c, "purged")
        assert all(_gone(c, f"/v1/evaluation/{e['ID']}") for e in purged_evals)
        assert c.get(f"/v1/allocation/{flaky['ID']}")["ClientStatus"] == "failed"
        assert c.http.post("/v1/system/gc").status_code == 200
    _rebuild_equals(database_url).close()


def _leader_pid(store: EventStore) -> int:
    with store.reader.connect() as conn:
        holder = conn.execute(text("SELECT holder FROM leases WHERE name = 'gc'")).scalar_one()
    return int(str(holder).rsplit(":", 1)[1])


def test_kill_9_of_the_active_collector_midway_leaves_the_standby_to_finish(
    database_url: str, nats_url: str, tmp_path: Path, js_fresh: object, store: EventStore
) -> None:
    count = 1500
    c = _cluster(database_url, nats_url, tmp_path, {"DROVER_GC_CHUNK": "5"}, gcs=2)
    beater = Beater(str(c.http.base_url))
    try:
        for i in range(5):  # room for 1,665 allocs (each asks 300 MB of disk)
            c.put("/v1/drover/node/register", {"Node": node_json(f"n{i}", cpu=100_000, mem=100_000)})
            beater.nodes.add(f"n{i}")
        c.put("/v1/jobs", job_json("big", count, cpu=10, mem=10))
        c.wait(lambda: len(c.get("/v1/job/big/allocations")) == count, timeout=60)
        c.http.delete("/v1/job/big").raise_for_status()
        c.wait(
            lambda: all(a["DesiredStatus"] == "stop" for a in c.get("/v1/job/big/allocations")), timeout=60
        )
        start = store.last_position()
        c.http.put("/v1/system/gc").raise_for_status()

        def collected() -> list[str]:
            return [
                a
                for r in store.read(start, 100_000)
                if r.event.type == "EvalsCollected"
                for a in r.event.allocs
            ]  # type: ignore[attr-defined]

        c.wait(collected, timeout=30, interval=0.005)
        leader = _leader_pid(store)
        index = next(i for i, p in enumerate(c.procs["gc"]) if p.pid == leader)
        c.kill("gc", index)
        at_kill = len(collected())
        assert 0 < at_kill < count, at_kill  # killed midway

        c.wait(
            lambda: any(
                e["JobID"] == "force-gc" and e["Status"] == "complete"
                for e in c.get("/v1/evaluations", namespace="*")
            ),
            timeout=60,
        )
        assert _leader_pid(store) == c.procs["gc"][1 - index].pid
        assert _gone(c, "/v1/job/big") and c.get("/v1/allocations") == []
        every = collected()
        assert len(every) == len(set(every)) == count  # each collected once, across both leaders
    finally:
        beater.close()
        c.stop()
    _rebuild_equals(database_url).close()
