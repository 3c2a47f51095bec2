"""Periodic jobs end to end: the dispatcher on the leader launches children with their
`periodic-job` evals, which the scheduler completes; ProhibitOverlap passes launches over while
a child runs; after downtime one missed launch is made up for; and a cron of seconds launches
exactly once per tick across a kill -9 of the active dispatcher."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from drover.model.events import JobRegistered
from drover.runtime.store import EventStore

from .cluster import Cluster, job_json, node_json
from .evals import NO_LINKS, links

# A node registered by hand keeps no heartbeat: its TTL must outlast the test.
ENV = {"DROVER_HEARTBEAT_MIN_TTL": "900", "DROVER_FAILOVER_HEARTBEAT_TTL": "900"}


def _cluster(database_url: str, nats_url: str, tmp_path: Path, leaders: int) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, leaders=leaders, env=ENV)
    c.start()
    try:
        c.put("/v1/drover/node/register", {"Node": node_json("n1")})
        yield c
    finally:
        c.stop()


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    yield from _cluster(database_url, nats_url, tmp_path, leaders=2)


@pytest.fixture
def cluster_without_leader(
    database_url: str, nats_url: str, tmp_path: Path, js_fresh: object
) -> Iterator[Cluster]:
    yield from _cluster(database_url, nats_url, tmp_path, leaders=0)


def periodic_job(job_id: str, **periodic: Any) -> dict[str, Any]:
    body = job_json(job_id, 1, cpu=100, mem=64)
    body["Job"]["Type"] = "batch"
    body["Job"]["Periodic"] = periodic
    return body


def children(c: Cluster, parent: str) -> list[str]:
    return sorted(j["ID"] for j in c.get("/v1/jobs", prefix=f"{parent}/periodic-") if j["ParentID"] == parent)


def launch_second(child_id: str) -> int:
    return int(child_id.rsplit("-", 1)[1])


def child_eval(c: Cluster, child_id: str) -> dict[str, Any]:
    """The child's one eval, once the scheduler has completed it."""
    path = f"/v1/job/{quote(child_id, safe='')}/evaluations"
    evals = c.wait(
        lambda: (e := c.get(path)) and e[0]["Status"] == "complete" and e, timeout=30, interval=0.1
    )
    assert len(evals) == 1, evals
    return evals[0]  # type: ignore[no-any-return]


def assert_launched_once(c: Cluster, child_id: str, parent: str) -> None:
    """The child was launched with one periodic-job eval, completed with the child placed (no
    blocked, follow-up or previous eval), and carries the parent's spec without its block."""
    evaluation = child_eval(c, child_id)
    assert (evaluation["TriggeredBy"], evaluation["Status"], evaluation["Type"]) == (
        "periodic-job",
        "complete",
        "batch",
    )
    assert links(evaluation) == NO_LINKS
    assert len(c.get(f"/v1/evaluation/{evaluation['ID']}/allocations")) == 1
    child = c.get(f"/v1/job/{quote(child_id, safe='')}")
    assert (child["ParentID"], child["Periodic"], child["Type"]) == (parent, None, "batch")


def job_registrations(database_url: str, prefix: str) -> list[str]:
    """The IDs of every JobRegistered in the log for jobs under `prefix`, in log order."""
    store = EventStore(database_url)
    try:
        events = [r.event for r in store.read(0, 100_000)]
    finally:
        store.close()
    return [e.job.id for e in events if isinstance(e, JobRegistered) and e.job.id.startswith(prefix)]


def sleep_until(unix: float) -> None:
    time.sleep(max(0.0, unix - time.time()))


def test_prohibit_overlap_passes_launches_over_while_a_child_runs(
    cluster: Cluster, database_url: str
) -> None:
    """Nomad's test spec (listed unix times) keeps this short. Nobody runs the children's allocs
    (no agent), so a child stays pending: live."""
    c = cluster
    t0 = int(time.time()) + 3
    ticks = [t0, t0 + 2, t0 + 4]
    spec = ",".join(map(str, ticks))
    c.put("/v1/jobs", periodic_job("single", Spec=spec, SpecType="test", ProhibitOverlap=True))
    c.put("/v1/jobs", periodic_job("many", Spec=spec, SpecType="test"))
    c.wait(lambda: len(children(c, "many")) == 3, timeout=30, interval=0.2)
    sleep_until(ticks[-1] + 2)
    assert [launch_second(j) for j in children(c, "many")] == ticks
    assert [launch_second(j) for j in children(c, "single")] == ticks[:1]
    for child_id in children(c, "many") + children(c, "single"):
        assert_launched_once(c, child_id, child_id.split("/")[0])
    assert c.get("/v1/job/single")["Status"] == c.get("/v1/job/many")["Status"] == "running"
    # A force ignores ProhibitOverlap.
    forced = c.put("/v1/job/single/periodic/force", {})
    evaluation = c.get(f"/v1/evaluation/{forced['EvalID']}")
    assert (evaluation["TriggeredBy"], evaluation["CreateIndex"]) == (
        "periodic-job",
        forced["EvalCreateIndex"],
    )
    assert len(children(c, "single")) == 2
    assert_launched_once(c, evaluation["JobID"], "single")
    assert sorted(job_registrations(database_url, "single/")) == children(c, "single")


def test_after_downtime_one_missed_launch_is_made_up_for(
    cluster_without_leader: Cluster, database_url: str
) -> None:
    c = cluster_without_leader
    t0 = int(time.time()) + 2
    ticks = [t0, t0 + 1, t0 + 2, t0 + 3]
    c.put("/v1/jobs", periodic_job("late", Spec=",".join(map(str, ticks)), SpecType="test"))
    sleep_until(ticks[-1] + 1)
    assert children(c, "late") == []  # no dispatcher: nothing launched
    c.spawn("leader")
    c.wait(lambda: children(c, "late"), timeout=30, interval=0.2)
    time.sleep(3)  # the dispatcher has run its passes since: nothing more
    assert [launch_second(j) for j in children(c, "late")] == ticks[-1:]
    assert_launched_once(c, children(c, "late")[0], "late")
    assert job_registrations(database_url, "late/") == children(c, "late")


def _leader(c: Cluster) -> int:
    """The index of the live leader process that leads (its log says so)."""
    return next(
        i
        for i, p in enumerate(c.procs["leader"])
        if p.poll() is None and "is the leader" in (c.log_dir / f"leader-{i}.log").read_text()
    )


def test_a_cron_launches_once_per_tick_across_a_kill_9_of_the_dispatcher(
    cluster: Cluster, database_url: str
) -> None:
    """A cron every ten seconds, in cronexpr's seven fields (a leading second): the first
    launch; the leader killed right after it (its successor must not launch it again); the
    successor killed a moment before the next launch (the next leader launches it, at once if
    it came to lead after the launch time, or on time). Exactly one child a tick."""
    c = cluster
    period = 10
    c.wait(lambda: any("is the leader" in f.read_text() for f in c.log_dir.glob("leader-*.log")), timeout=30)
    if time.time() % period > period - 3:
        time.sleep(4)  # not a moment before a launch time: the first launch is the next tick's
    registered = time.time()
    c.put("/v1/jobs", periodic_job("ticking", Crons=[f"*/{period} * * * * * *"]))
    first = (int(registered) // period + 1) * period
    c.wait(lambda: children(c, "ticking"), timeout=first - time.time() + 20, interval=0.2)
    c.kill("leader", _leader(c))
    c.spawn("leader")
    sleep_until(first + period - 0.2)
    c.kill("leader", _leader(c))
    c.spawn("leader")
    c.wait(lambda: len(children(c, "ticking")) >= 2, timeout=first + period - time.time() + 30, interval=0.2)
    sleep_until(first + period + 5)  # time for a leader to launch a tick twice, if it would
    # The two ticks, each launched once (a third may be due if the wait above ran long).
    seen = children(c, "ticking")
    assert [launch_second(j) for j in seen[:2]] == [first, first + period], seen
    for child_id in seen:
        assert_launched_once(c, child_id, "ticking")
    # One registration of each child in the whole log, and no eval of the parent's own.
    assert [j for j in job_registrations(database_url, "ticking/") if j in seen] == seen
    assert c.get("/v1/job/ticking/evaluations") == []
    assert c.get("/v1/job/ticking")["Status"] == "running"
