"""The eval triggers (TriggeredBy) that follow a job's own life, each caused through the public API with every
service its own process: job-register, job-deregister, job-scaling, queued-allocs, alloc-failure,
preemption, rolling-update. Each test asserts the eval's TriggeredBy, its status and its links
(PreviousEval, NextEval, BlockedEval, WaitUntil)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.model.durations import SECOND

from .cluster import Cluster, job_json, node_json
from .evals import NO_LINKS, evals_of, links, wait_eval, wait_trigger


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path).start()
    yield c
    c.stop()


def node(c: Cluster, node_id: str, cpu: int = 4000) -> None:
    c.put("/v1/drover/node/register", {"Node": node_json(node_id, cpu=cpu)})


def plain_job(job_id: str, count: int, **kw: Any) -> dict[str, Any]:
    """A service job without an update block (no deployment)."""
    job = job_json(job_id, count, **kw)
    job["Job"]["Update"] = {"MaxParallel": 0}
    return job


def test_job_register(cluster: Cluster) -> None:
    c = cluster
    node(c, "n1")
    resp = c.put("/v1/jobs", plain_job("web", 2))
    evaluation = wait_eval(c, resp["EvalID"])
    assert (
        evaluation["TriggeredBy"] == "job-register"
        and evaluation["JobID"] == "web"
        and evaluation["Type"] == "service"
    )
    assert evaluation["CreateIndex"] == resp["EvalCreateIndex"]
    assert links(evaluation) == NO_LINKS
    assert evaluation["QueuedAllocations"] == {"web": 0} and evaluation["FailedTGAllocs"] == {}
    assert sorted(a["EvalID"] for a in c.get("/v1/job/web/allocations")) == [evaluation["ID"]] * 2


def test_job_deregister(cluster: Cluster) -> None:
    c = cluster
    node(c, "n1")
    wait_eval(c, c.put("/v1/jobs", plain_job("web", 2))["EvalID"])
    r = c.http.delete("/v1/job/web")
    assert r.status_code == 200
    evaluation = wait_eval(c, r.json()["EvalID"])
    assert evaluation["TriggeredBy"] == "job-deregister" and evaluation["JobID"] == "web"
    assert links(evaluation) == NO_LINKS
    allocs = c.get("/v1/job/web/allocations")
    assert len(allocs) == 2 and all(a["DesiredStatus"] == "stop" for a in allocs)
    assert [e["TriggeredBy"] for e in evals_of(c, "web")] == ["job-register", "job-deregister"]


def test_job_scaling(cluster: Cluster) -> None:
    c = cluster
    node(c, "n1")
    wait_eval(c, c.put("/v1/jobs", plain_job("web", 1))["EvalID"])
    resp = c.put("/v1/job/web/scale", {"Count": 3, "Target": {"Group": "web"}})
    evaluation = wait_eval(c, resp["EvalID"])
    assert evaluation["TriggeredBy"] == "job-scaling" and evaluation["JobID"] == "web"
    assert links(evaluation) == NO_LINKS
    # Two placed, the first updated in place to the new version: all three by this eval.
    allocs = c.get("/v1/job/web/allocations")
    assert sorted(a["Name"] for a in allocs) == [f"web.web[{i}]" for i in range(3)]
    assert {a["EvalID"] for a in allocs} == {evaluation["ID"]}


def test_queued_allocs(cluster: Cluster) -> None:
    c = cluster
    node(c, "small", cpu=1000)
    resp = c.put("/v1/jobs", plain_job("web", 2, cpu=800))
    evaluation = wait_eval(c, resp["EvalID"])
    assert evaluation["TriggeredBy"] == "job-register"
    assert (
        evaluation["QueuedAllocations"] == {"web": 1}
        and evaluation["FailedTGAllocs"]["web"]["NodesExhausted"] == 1
    )
    blocked = c.get(f"/v1/evaluation/{evaluation['BlockedEval']}")
    assert blocked["TriggeredBy"] == "queued-allocs"
    assert blocked["Status"] == "blocked"
    assert blocked["StatusDescription"] == "created to place remaining allocations"
    assert links(blocked) == {**NO_LINKS, "PreviousEval": evaluation["ID"]}

    # A node joins: the blocked eval is released and places the other alloc.
    node(c, "big", cpu=1000)
    done = wait_eval(c, blocked["ID"])
    assert links(done) == {**NO_LINKS, "PreviousEval": evaluation["ID"]}
    assert done["QueuedAllocations"] == {"web": 0}
    by_eval = {a["EvalID"]: a["NodeID"] for a in c.get("/v1/job/web/allocations")}
    assert by_eval[blocked["ID"]] == "big"


def test_alloc_failure(cluster: Cluster) -> None:
    """A client reports its alloc failed: the API creates an alloc-failure eval; the reschedule
    delay not having passed, the scheduler creates a second alloc-failure eval due then
    (WaitUntil), which places the replacement."""
    c = cluster
    node(c, "n1")
    job = plain_job("web", 1)
    job["Job"]["TaskGroups"][0]["ReschedulePolicy"] = {
        "Attempts": 1, "Interval": 3600 * SECOND, "Delay": 5 * SECOND, "DelayFunction": "constant", "Unlimited": False,
    }  # fmt: skip
    wait_eval(c, c.put("/v1/jobs", job)["EvalID"])
    (alloc,) = c.get("/v1/job/web/allocations")
    finished = time.time_ns()
    dead = {"web": {"State": "dead", "Failed": True, "FinishedAt": finished}}
    c.put(
        "/v1/drover/allocs/status",
        {"NodeID": "n1", "Updates": [{"ID": alloc["ID"], "ClientStatus": "failed", "TaskStates": dead}]},
    )
    (failure,) = wait_trigger(c, "web", "alloc-failure")
    failure = wait_eval(c, failure["ID"])
    assert links(failure) == NO_LINKS

    later = c.wait(lambda: c.get(f"/v1/allocation/{alloc['ID']}")["FollowupEvalID"])
    follow = c.get(f"/v1/evaluation/{later}")
    assert follow["TriggeredBy"] == "alloc-failure"
    assert follow["Status"] == "pending"
    assert follow["StatusDescription"] == "created for delayed rescheduling"
    assert links(follow) == {**NO_LINKS, "PreviousEval": failure["ID"], "WaitUntil": finished + 5 * SECOND}
    follow = wait_eval(c, later)
    assert follow["ModifyTime"] >= finished + 5 * SECOND
    (replacement,) = [a for a in c.get("/v1/job/web/allocations") if a["ID"] != alloc["ID"]]
    assert replacement["EvalID"] == later and replacement["PreviousAllocation"] == alloc["ID"]


def test_preemption(cluster: Cluster) -> None:
    """A system job that does not fit preempts a service alloc at least 10 priority lower; the
    plan applier gives the preempted job its eval in the append that commits the plan."""
    c = cluster
    node(c, "n1", cpu=1000)
    low = plain_job("low", 1, cpu=800)
    low["Job"]["Priority"] = 20
    wait_eval(c, c.put("/v1/jobs", low)["EvalID"])
    (victim,) = c.get("/v1/job/low/allocations")
    system = job_json("sys", 1, cpu=500)
    system["Job"].update(Type="system", Priority=70)
    sys_eval = wait_eval(c, c.put("/v1/jobs", system)["EvalID"])

    (pre,) = wait_trigger(c, "low", "preemption")
    assert pre["CreateIndex"] == sys_eval["ModifyIndex"]  # written with the commit that preempted
    pre = c.wait(lambda: (e := c.get(f"/v1/evaluation/{pre['ID']}"))["Status"] == "complete" and e)
    assert pre["PreviousEval"] == pre["NextEval"] == "" and pre["WaitUntil"] == 0
    # No room for the preempted alloc elsewhere: it waits in a blocked eval.
    blocked = c.get(f"/v1/evaluation/{pre['BlockedEval']}")
    assert blocked["TriggeredBy"] == "queued-allocs" and blocked["Status"] == "blocked"
    assert blocked["PreviousEval"] == pre["ID"]
    evicted = c.get(f"/v1/allocation/{victim['ID']}")
    (placed,) = c.get("/v1/job/sys/allocations")
    assert evicted["DesiredStatus"] == "evict" and evicted["PreemptedByAllocation"] == placed["ID"]
    assert placed["PreemptedAllocations"] == [victim["ID"]]


def test_rolling_update(cluster: Cluster) -> None:
    """A system job's update of max_parallel 1 replaces one alloc per eval: each eval's NextEval
    is a rolling-update eval due `stagger` later."""
    c = cluster
    for i in range(3):
        node(c, f"n{i}")
    system = job_json("sys", 1, cpu=100)
    system["Job"].update(Type="system", Update={"MaxParallel": 1, "Stagger": SECOND})
    wait_eval(c, c.put("/v1/jobs", system)["EvalID"])
    assert len(c.get("/v1/job/sys/allocations")) == 3

    system["Job"]["TaskGroups"][0]["Tasks"][0]["Config"] = {"run_for": "10m"}
    first = wait_eval(c, c.put("/v1/jobs", system)["EvalID"])
    assert first["TriggeredBy"] == "job-register"
    chain = [first]
    while chain[-1]["NextEval"]:
        nxt = wait_eval(c, chain[-1]["NextEval"])
        chain.append(nxt)
    assert len(chain) == 3
    for prev, evaluation in itertools.pairwise(chain):
        assert evaluation["TriggeredBy"] == "rolling-update"
        assert evaluation["PreviousEval"] == prev["ID"] and evaluation["BlockedEval"] == ""
        assert evaluation["Wait"] == SECOND and evaluation["WaitUntil"] == evaluation["CreateTime"] + SECOND
        assert evaluation["ModifyTime"] >= evaluation["WaitUntil"]
    live = [a for a in c.get("/v1/job/sys/allocations") if a["DesiredStatus"] == "run"]
    assert sorted(a["JobVersion"] for a in live) == [1, 1, 1]
    # One destructive update per eval.
    assert sorted(sum(1 for a in live if a["EvalID"] == e["ID"]) for e in chain) == [1, 1, 1]
