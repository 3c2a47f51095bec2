"""Durable job restarts end to end: real agents running real commands restart a
job's allocs in batches, each task exactly once, in place; pause holds the next batch, resume
goes on, cancel ends it; kill -9 of the active leader mid-restart restarts nothing twice."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.model.durations import SECOND as S
from drover.model.jobrestart import request_id
from drover.runtime.store import EventStore

from .cluster import Cluster
from .test_client import AGENT_START, ENV, Agents, agents, allocs, raw_exec_job  # noqa: F401 - the agents fixture

# No deployments (max_parallel 0): a restart waits for none.
NO_DEPLOYMENT = {"Update": {"MaxParallel": 0}}


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(
        database_url, nats_url, tmp_path, leaders=2, env={**ENV, "DROVER_FAILOVER_HEARTBEAT_TTL": "30"}
    )
    yield c.start()
    c.stop()


def _running(c: Cluster, job_id: str, count: int) -> list[dict[str, Any]]:
    return c.wait(
        lambda: len(r := [a for a in allocs(c, job_id) if a["ClientStatus"] == "running"]) == count and r,
        timeout=30,
    )


def _start(c: Cluster, runners: Agents, tmp_path: Path, count: int) -> tuple[list[dict[str, Any]], Path]:
    runners.start("a1", "--enable-raw-exec")
    c.wait(lambda: [n for n in c.get("/v1/nodes") if n["Status"] == "ready"], timeout=AGENT_START)
    starts = tmp_path / "starts"
    cmd = f"echo $NOMAD_ALLOC_ID >> {starts}; exec sleep 300"
    c.put("/v1/jobs", raw_exec_job("svc", "/bin/sh", "-c", cmd, count=count, **NO_DEPLOYMENT))
    return _running(c, "svc", count), starts


def _restarted_once(c: Cluster, restart_id: str, before: list[dict[str, Any]], starts: Path) -> None:
    """Every alloc kept its ID and node and ran its task exactly twice: once, and once again
    for the restart's request."""
    after = {a["ID"]: a for a in allocs(c, "svc")}
    assert {a["ID"]: a["NodeID"] for a in before} == {i: a["NodeID"] for i, a in after.items()}
    for alloc_id in after:
        task = c.get(f"/v1/allocation/{alloc_id}")["TaskStates"]["t"]
        signals = [e for e in task["Events"] if e["Type"] == "Restart Signaled"]
        assert [e["Details"]["restart_id"] for e in signals] == [request_id(restart_id, alloc_id)]
        assert task["Restarts"] == 1 and task["State"] == "running"
    lines = starts.read_text().split()
    assert sorted(lines) == sorted(2 * list(after)), lines


def _signal_times(database_url: str, restart_id: str) -> list[int]:
    store = EventStore(database_url)
    try:
        events = [r.event for r in store.read(0, 100_000)]
    finally:
        store.close()
    return [e.at for e in events if e.type == "JobRestartSignaled" and e.restart_id == restart_id]  # type: ignore[attr-defined]


def test_a_job_restarts_in_batches_each_task_exactly_once(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
    tmp_path: Path,
    database_url: str,
) -> None:
    c = cluster
    before, starts = _start(c, agents, tmp_path, 6)
    out = c.put("/v1/job/svc/restart", {"BatchSize": 2, "BatchWait": "2s"})
    rid = out["RestartID"]
    r = c.wait(lambda: (r := c.get(f"/v1/job/svc/restart/{rid}"))["Status"] == "complete" and r, timeout=90)
    assert r["BatchNumber"] == 3 and sorted(r["RestartedAllocs"]) == sorted(a["ID"] for a in before)
    assert r["StatusDescription"] == "Restarted 6 allocs in 3 batches"
    _restarted_once(c, rid, before, starts)
    times = _signal_times(database_url, rid)
    assert len(times) == 3 and all(b - a >= 2 * S for a, b in itertools.pairwise(times)), times
    assert [x["ID"] for x in c.get("/v1/job/svc/restarts")] == [rid]


def test_pause_holds_the_next_batch_resume_goes_on_and_cancel_ends_it(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
    tmp_path: Path,
) -> None:
    c = cluster
    _start(c, agents, tmp_path, 4)
    rid = c.put("/v1/job/svc/restart", {"BatchSize": 1, "BatchWait": "3s"})["RestartID"]
    c.wait(lambda: c.get(f"/v1/job/svc/restart/{rid}")["BatchDoneAt"], timeout=30)
    c.put(f"/v1/job/svc/restart/{rid}/pause", {})
    paused = c.get(f"/v1/job/svc/restart/{rid}")
    assert paused["Status"] == "paused" and paused["BatchNumber"] == 1
    r = c.http.put(f"/v1/job/svc/restart/{rid}/pause", json={})
    assert r.status_code == 400 and "can't pause a paused restart" in r.text
    time.sleep(5)  # past the batch wait: a paused restart signals nothing
    assert c.get(f"/v1/job/svc/restart/{rid}")["BatchNumber"] == 1
    c.put(f"/v1/job/svc/restart/{rid}/resume", {})
    c.wait(lambda: c.get(f"/v1/job/svc/restart/{rid}")["BatchNumber"] == 2, timeout=30)
    r = c.http.delete(f"/v1/job/svc/restart/{rid}")
    assert r.status_code == 200, r.text
    time.sleep(5)
    ended = c.get(f"/v1/job/svc/restart/{rid}")
    assert ended["Status"] == "cancelled" and ended["BatchNumber"] == 2
    assert ended["StatusDescription"] == "Cancelled by an operator"
    assert c.http.delete(f"/v1/job/svc/restart/{rid}").status_code == 400


def test_kill_9_of_the_active_leader_mid_restart_restarts_nothing_twice(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
    tmp_path: Path,
) -> None:
    c = cluster
    before, starts = _start(c, agents, tmp_path, 6)
    rid = c.put("/v1/job/svc/restart", {"BatchSize": 1, "BatchWait": "1s"})["RestartID"]
    for batch in (2, 4):
        c.wait(lambda b=batch: c.get(f"/v1/job/svc/restart/{rid}")["BatchNumber"] >= b, timeout=60)
        leader = next(
            i for i, _ in enumerate(c.procs["leader"])
            if c.procs["leader"][i].poll() is None
            and "is the leader" in (c.log_dir / f"leader-{i}.log").read_text()
        )  # fmt: skip
        c.kill("leader", leader)
        c.spawn("leader")  # a standby again
    r = c.wait(lambda: (r := c.get(f"/v1/job/svc/restart/{rid}"))["Status"] == "complete" and r, timeout=120)
    assert r["BatchNumber"] == 6
    _restarted_once(c, rid, before, starts)
