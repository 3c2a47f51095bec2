"""Durable job restarts when things go wrong or move underneath them, end to end with real
agents: rescheduled instead of restarted in place; a task failing after its restart pauses the
restart (or fails it); deployments and restarts exclude each other; an agent killed mid-batch
restarts its allocs once when it is back."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.model.durations import SECOND as S
from drover.model.jobrestart import request_id

from .cluster import Cluster
from .test_client import AGENT_START, ENV, Agents, agents, allocs, raw_exec_job  # noqa: F401 - the agents fixture

NO_DEPLOYMENT = {"Update": {"MaxParallel": 0}}


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    # TTLs of 10-20 s: an agent killed below must be back before its node is missed.
    c = Cluster(database_url, nats_url, tmp_path, env={**ENV, "DROVER_HEARTBEAT_MIN_TTL": "10"})
    yield c.start()
    c.stop()


def _ready(c: Cluster, runners: Agents) -> None:
    runners.start("a1", "--enable-raw-exec")
    c.wait(lambda: [n for n in c.get("/v1/nodes") if n["Status"] == "ready"], timeout=AGENT_START)


def _live(c: Cluster, job_id: str) -> list[dict[str, Any]]:
    return [a for a in allocs(c, job_id) if a["DesiredStatus"] == "run" and a["ClientStatus"] == "running"]


def _restart(c: Cluster, rid: str, *statuses: str, timeout: float = 60) -> dict[str, Any]:
    return c.wait(
        lambda: (r := c.get(f"/v1/job/svc/restart/{rid}"))["Status"] in statuses and r, timeout=timeout
    )


def test_with_reschedule_allocs_are_replaced_and_the_old_ones_stopped(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
) -> None:
    c = cluster
    _ready(c, agents)
    c.put("/v1/jobs", raw_exec_job("svc", "/bin/sh", "-c", "exec sleep 300", count=3, **NO_DEPLOYMENT))
    before = c.wait(lambda: len(r := _live(c, "svc")) == 3 and r, timeout=30)
    rid = c.put("/v1/job/svc/restart", {"BatchSize": 2, "Reschedule": True})["RestartID"]
    _restart(c, rid, "complete")
    old = {a["ID"] for a in before}
    now = {a["ID"]: a for a in allocs(c, "svc")}
    for alloc_id in old:
        a = now[alloc_id]
        assert a["DesiredStatus"] == "stop" and a["NextAllocation"], a
        assert now[a["NextAllocation"]]["ClientStatus"] == "running"
    assert len(_live(c, "svc")) == 3 and not old & {a["ID"] for a in _live(c, "svc")}
    stops = [e for e in c.get("/v1/job/svc/evaluations") if e["TriggeredBy"] == "alloc-stop"]
    assert len(stops) == 2  # one per batch


@pytest.mark.parametrize(("on_error", "status"), [("pause", "paused"), ("fail", "failed")])
def test_a_task_failing_after_its_restart_pauses_or_fails_the_restart(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
    tmp_path: Path,
    on_error: str,
    status: str,
) -> None:
    c = cluster
    _ready(c, agents)
    # Runs once; run again (the restart), it fails at once, and the restart block gives up. The
    # health check holds the batch long enough (min_healthy_time) for the failure to be reported
    # on a loaded host.
    cmd = f"m={tmp_path}/$NOMAD_ALLOC_ID; [ -f $m ] && exit 3; touch $m; exec sleep 300"
    job = raw_exec_job("svc", "/bin/sh", "-c", cmd, count=2, RestartPolicy={"Attempts": 0, "Mode": "fail"},
                       Update={"MaxParallel": 0, "MinHealthyTime": 15 * S, "HealthyDeadline": 60 * S})  # fmt: skip
    c.put("/v1/jobs", job)
    c.wait(lambda: len(_live(c, "svc")) == 2, timeout=30)
    # Each task has left its mark: restarted before that, it would run again for good.
    c.wait(lambda: all((tmp_path / a["ID"]).exists() for a in _live(c, "svc")), timeout=30)
    body = {"BatchSize": 1, "OnError": on_error, "HealthCheck": True}
    rid = c.put("/v1/job/svc/restart", body)["RestartID"]
    r = _restart(c, rid, "paused", "failed", "complete")
    assert r["Status"] == status and r["BatchNumber"] == 1, r
    assert "instead of running again" in r["StatusDescription"] or "not healthy" in r["StatusDescription"]
    time.sleep(2)
    assert c.get(f"/v1/job/svc/restart/{rid}")["BatchNumber"] == 1  # no further batch


def test_deployments_and_restarts_exclude_each_other(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
) -> None:
    c = cluster
    _ready(c, agents)
    update = {
        "MaxParallel": 1,
        "MinHealthyTime": 1 * S,
        "HealthyDeadline": 30 * S,
        "ProgressDeadline": 60 * S,
    }
    c.put("/v1/jobs", raw_exec_job("svc", "/bin/sh", "-c", "exec sleep 300", count=2, Update=update))
    c.wait(lambda: (d := c.get("/v1/job/svc/deployment")) and d["Status"] == "running", timeout=30)
    r = c.http.put("/v1/job/svc/restart", json={})
    assert r.status_code == 409 and "active deployment" in r.text, r.text
    c.wait(lambda: c.get("/v1/job/svc/deployment")["Status"] == "successful", timeout=60)
    rid = c.put("/v1/job/svc/restart", {"BatchSize": 1, "BatchWait": "60s"})["RestartID"]
    c.wait(lambda: c.get(f"/v1/job/svc/restart/{rid}")["BatchDoneAt"], timeout=30)
    changed = raw_exec_job("svc", "/bin/sh", "-c", "exec sleep 301", count=2, Update=update)
    c.put("/v1/jobs", changed)  # a new version: a deployment starts
    r = _restart(c, rid, "cancelled", timeout=30)
    dep = c.get("/v1/job/svc/deployment")
    assert r["StatusDescription"] == f"Cancelled because deployment {dep['ID']} started"


def test_an_agent_killed_mid_batch_restarts_its_allocs_once_when_back(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
    tmp_path: Path,
) -> None:
    c = cluster
    _ready(c, agents)
    starts = tmp_path / "starts"
    cmd = f"echo $NOMAD_ALLOC_ID >> {starts}; exec sleep 300"
    c.put("/v1/jobs", raw_exec_job("svc", "/bin/sh", "-c", cmd, count=4, **NO_DEPLOYMENT))
    before = c.wait(lambda: len(r := _live(c, "svc")) == 4 and r, timeout=30)
    # The agent is killed (kill -9) and the first batch signalled while it is gone: back, it
    # re-attaches to its tasks and restarts that batch's allocs, once.
    agents.procs["a1"].kill()
    agents.procs.pop("a1").wait()
    rid = c.put("/v1/job/svc/restart", {"BatchSize": 2, "BatchWait": "1s"})["RestartID"]
    c.wait(lambda: c.get(f"/v1/job/svc/restart/{rid}")["BatchNumber"] >= 1, timeout=30)
    agents.start("a1", "--enable-raw-exec")
    _restart(c, rid, "complete", timeout=90)
    for a in before:
        task = c.get(f"/v1/allocation/{a['ID']}")["TaskStates"]["t"]
        signals = [e for e in task["Events"] if e["Type"] == "Restart Signaled"]
        assert [e["Details"]["restart_id"] for e in signals] == [request_id(rid, a["ID"])], task["Events"]
        assert task["Restarts"] == 1 and task["State"] == "running"
    lines = starts.read_text().split()
    assert sorted(lines) == sorted(2 * [a["ID"] for a in before]), lines


def test_an_agent_killed_while_carrying_out_a_restart_finishes_it_once_when_back(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The agent saves a restart it takes on before acting on it. Killed (kill -9) right after,
    one alloc's task still running its old process and the other's already stopped by the
    restart, it carries out what it saved when it is back: each task runs again once."""
    c = cluster
    _ready(c, agents)
    starts = tmp_path / "starts"
    cmd = f"echo $NOMAD_ALLOC_ID >> {starts}; exec sleep 300"
    c.put("/v1/jobs", raw_exec_job("svc", "/bin/sh", "-c", cmd, count=2, **NO_DEPLOYMENT))
    before = c.wait(lambda: len(r := _live(c, "svc")) == 2 and r, timeout=30)
    agents.procs["a1"].kill()
    agents.procs.pop("a1").wait()
    rid = c.put("/v1/job/svc/restart", {"BatchSize": 2})["RestartID"]
    c.wait(lambda: c.get(f"/v1/job/svc/restart/{rid}")["BatchNumber"] >= 1, timeout=30)
    # What the agent had written when it was killed: both requests taken on, neither finished.
    path = tmp_path / "a1" / "client" / "state.json"
    state = json.loads(path.read_text())
    for a in before:
        req = request_id(rid, a["ID"])
        state[a["ID"]].update(RestartHandled=req, RestartPending={"t": req})
    path.write_text(json.dumps(state))
    stopped = state[before[0]["ID"]]["Tasks"]["t"]
    os.killpg(stopped["pid"], signal.SIGTERM)
    c.wait(lambda: Path(stopped["exit_file"]).exists(), timeout=10)
    agents.start("a1", "--enable-raw-exec")
    _restart(c, rid, "complete", timeout=60)
    for a in before:
        task = c.get(f"/v1/allocation/{a['ID']}")["TaskStates"]["t"]
        signals = [e for e in task["Events"] if e["Type"] == "Restart Signaled"]
        assert [e["Details"]["restart_id"] for e in signals] == [request_id(rid, a["ID"])], task["Events"]
        assert task["Restarts"] == 1 and task["State"] == "running", task
    # "running" is reported once the process is spawned, which can be before its shell echoes.
    c.wait(lambda: len(starts.read_text().split()) >= 4, timeout=10)
    lines = starts.read_text().split()
    assert sorted(lines) == sorted(2 * [a["ID"] for a in before]), lines
    saved = json.loads(path.read_text())
    assert all(not saved[a["ID"]]["RestartPending"] for a in before), saved
