"""Restarting an alloc's tasks on request (Nomad's `alloc restart`), end to end: a real agent
running a real command restarts one task, then the running ones, in place (same alloc, same
node, a new process); bad requests are refused with their reason and change nothing; and an
agent that restarts itself does not act on the same request twice."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .cluster import Cluster
from .test_client import AGENT_START, ENV, Agents, agents, allocs, raw_exec_job  # noqa: F401 - the agents fixture


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    # TTLs of 10-20 s: the agent restarted below must be back before its node is missed.
    c = Cluster(database_url, nats_url, tmp_path, env={**ENV, "DROVER_HEARTBEAT_MIN_TTL": "10"}).start()
    yield c
    c.stop()


def _task(c: Cluster, alloc_id: str) -> dict[str, Any]:
    task: dict[str, Any] = c.get(f"/v1/allocation/{alloc_id}")["TaskStates"]["t"]
    return task


def test_an_alloc_restart_runs_the_task_again_in_place(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
    tmp_path: Path,
) -> None:
    c = cluster
    agents.start("a1", "--enable-raw-exec")
    c.wait(lambda: [n for n in c.get("/v1/nodes") if n["Status"] == "ready"], timeout=AGENT_START)
    starts = tmp_path / "starts"
    c.put("/v1/jobs", raw_exec_job("svc", "/bin/sh", "-c", f"echo $$ >> {starts}; exec sleep 60"))
    (alloc,) = c.wait(lambda: [a for a in allocs(c, "svc") if a["ClientStatus"] == "running"], timeout=15)
    aid = alloc["ID"]
    c.wait(lambda: starts.exists() and len(starts.read_text().split()) == 1)

    # Refused, with the reason, and nothing written to the log.
    before = c.http.get("/v1/jobs").headers["X-Nomad-Index"]
    for body, status, reason in (
        ({"TaskName": "nope"}, 400, 'Unknown task "nope"'),
        ({"TaskName": "t", "AllTasks": True}, 400, "cannot be set when restarting all tasks"),
        ({"AllTasks": "yes"}, 400, "AllTasks must be a boolean"),
    ):
        r = c.http.put(f"/v1/client/allocation/{aid}/restart", json=body)
        assert r.status_code == status and reason in r.text, r.text
    r = c.http.put("/v1/client/allocation/no-such-alloc/restart", json={})
    assert r.status_code == 404
    assert c.http.get("/v1/jobs").headers["X-Nomad-Index"] == before

    # One task by name: the same alloc runs it again as a new process.
    rid = c.put(f"/v1/client/allocation/{aid}/restart", {"TaskName": "t"})["RestartID"]
    task = c.wait(lambda: (t := _task(c, aid))["Restarts"] == 1 and t["State"] == "running" and t, timeout=15)
    signaled = [e for e in task["Events"] if e["Type"] == "Restart Signaled"]
    assert signaled and signaled[-1]["Details"]["restart_id"] == rid
    assert signaled[-1]["DisplayMessage"] == "User requested restart"
    pids = c.wait(lambda: len(p := starts.read_text().split()) == 2 and p)
    assert pids[0] != pids[1]

    # No task named: the running ones.
    c.put(f"/v1/client/allocation/{aid}/restart", {})
    c.wait(lambda: (t := _task(c, aid))["Restarts"] == 2 and t["State"] == "running", timeout=15)
    c.wait(lambda: len(starts.read_text().split()) == 3)
    now = c.get(f"/v1/allocation/{aid}")
    assert now["ClientStatus"] == "running" and now["NodeID"] == alloc["NodeID"]
    assert len(allocs(c, "svc")) == 1  # restarted in place, never rescheduled

    # An agent that comes back (kill -9) re-attaches and does not restart the task again.
    agents.procs["a1"].kill()
    agents.procs.pop("a1").wait()
    agents.start("a1", "--enable-raw-exec")
    c.wait(lambda: "re-attached" in (tmp_path / "agent-a1.log").read_text(), timeout=AGENT_START)
    time.sleep(2)
    assert len(starts.read_text().split()) == 3
    assert _task(c, aid)["Restarts"] == 2
