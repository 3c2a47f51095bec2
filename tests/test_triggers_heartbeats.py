"""Worked examples of the evals that follow missed heartbeats, end to end with every service
its own process (heartbeat TTLs shortened to seconds), counting the evals. The third example,
a canary update, is in test_triggers_deployments."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .cluster import Cluster, job_json, node_json
from .evals import evals_of, settled
from .test_heartbeats import ENV, Beater


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, env=ENV).start()
    yield c
    c.stop()


@pytest.fixture
def beater(cluster: Cluster) -> Iterator[Beater]:
    b = Beater(str(cluster.http.base_url))
    yield b
    b.close()


def register_node(c: Cluster, beater: Beater, node_id: str) -> None:
    c.put("/v1/drover/node/register", {"Node": node_json(node_id)})
    beater.nodes.add(node_id)


def system_job(job_id: str) -> dict[str, Any]:
    job = job_json(job_id, 1, cpu=100, mem=64)
    job["Job"]["Type"] = "system"
    return job


def service_job(job_id: str, **extra: Any) -> dict[str, Any]:
    job = job_json(job_id, 1, cpu=100, mem=64)
    job["Job"].update(Update={"MaxParallel": 0}, **extra)
    return job


def settled_all(c: Cluster, jobs: list[str]) -> dict[str, list[dict[str, Any]]]:
    return {j: settled(c, j) for j in jobs}


def test_a_node_running_a_system_and_two_service_jobs_misses_its_heartbeat(
    cluster: Cluster, beater: Beater
) -> None:
    """A node runs one system job and two service jobs and misses
    its heartbeat. Each job gets a node-update eval; the system job's stops its alloc there;
    service 1, which may run only on that node, cannot be placed and gets a blocked
    queued-allocs eval; service 2 is placed on the other node.

    Counted as Nomad runs it, this case has six evals, two of them because service 2's plan is rejected again and
    again, "because the scheduler has fallen behind in raft replication": a failed eval
    (max-plan-attempts) and its failed-follow-up. Drover's workers do not fall behind that way:
    a worker schedules an eval only once its replica holds the eval's log position, and after a
    refused plan only once it holds the position the plan applier verified against, so a plan
    is refused only for a commit made after it was scheduled; here the other evals' commits
    leave room for service 2's. So Drover creates four evals. The other two triggers are caused
    with a real conflict and real delivery failures in test_triggers_failures."""
    c = cluster
    register_node(c, beater, "a")
    pinned = [{"LTarget": "${node.unique.id}", "RTarget": "a", "Operand": "="}]
    c.put("/v1/jobs", system_job("sys"))
    c.put("/v1/jobs", service_job("service1", Constraints=pinned))
    c.put("/v1/jobs", service_job("service2"))
    jobs = ["sys", "service1", "service2"]
    for j in jobs:
        c.wait(lambda j=j: [a["NodeID"] for a in c.get(f"/v1/job/{j}/allocations")] == ["a"])  # type: ignore[misc]
    register_node(c, beater, "b")
    c.wait(lambda: len(c.get("/v1/job/sys/allocations")) == 2)
    before = {e["ID"] for evals in settled_all(c, jobs).values() for e in evals}

    beater.nodes.discard("a")
    c.wait(lambda: c.get("/v1/node/a")["Status"] == "down", timeout=15)
    after = {j: [e for e in evals if e["ID"] not in before] for j, evals in settled_all(c, jobs).items()}
    assert sum(len(evals) for evals in after.values()) == 4, after

    (sys_update,) = after["sys"]
    assert sys_update["TriggeredBy"] == "node-update" and sys_update["NodeID"] == "a"
    assert sys_update["Status"] == "complete" and sys_update["BlockedEval"] == ""
    update1, blocked = after["service1"]
    assert update1["TriggeredBy"] == "node-update" and update1["Status"] == "complete"
    assert update1["BlockedEval"] == blocked["ID"]
    assert blocked["TriggeredBy"] == "queued-allocs" and blocked["Status"] == "blocked"
    assert blocked["PreviousEval"] == update1["ID"]
    (update2,) = after["service2"]
    assert update2["TriggeredBy"] == "node-update" and update2["Status"] == "complete"
    assert update2["BlockedEval"] == ""

    lost = [a for j in jobs for a in c.get(f"/v1/job/{j}/allocations") if a["NodeID"] == "a"]
    assert len(lost) == 3 and all(a["ClientStatus"] == "lost" for a in lost)
    (moved,) = [a for a in c.get("/v1/job/service2/allocations") if a["NodeID"] == "b"]
    assert moved["EvalID"] == update2["ID"]
    assert [a["NodeID"] for a in c.get("/v1/job/service1/allocations")] == ["a"]


def test_two_nodes_running_five_system_jobs_go_down_and_come_back(cluster: Cluster, beater: Beater) -> None:
    """Two nodes, each running one alloc of each of five system jobs,
    miss their heartbeats and then heartbeat again. Each transition gives every system job a
    node-update eval for the node: 2 nodes x 5 jobs x 2 = 20 evals, and no other.

    Nomad's count calls them no-ops; what they amount to is the flapping nodes' own allocs and
    nothing else: the evals of a node going down record its allocs lost (as Nomad's system
    scheduler does), those of its return place one alloc of each job back on it; nothing is
    placed elsewhere, nothing blocks, no eval has a follow-up. Evals of one job that are
    pending together are folded by the broker (the newest runs, the rest are canceled), which
    is why a status may be canceled. The garbage collector then takes every one of them whose
    allocs have all ended, with those allocs (Nomad's eval GC): what is left holds a live alloc."""
    c = cluster
    nodes = ["a", "b"]
    jobs = [f"sys{i}" for i in range(1, 6)]
    for n in nodes:
        register_node(c, beater, n)
    for j in jobs:
        c.put("/v1/jobs", system_job(j))
    originals = {
        j: c.wait(lambda j=j: len(a := c.get(f"/v1/job/{j}/allocations")) == 2 and a)  # type: ignore[misc]
        for j in jobs
    }
    before = {e["ID"] for evals in settled_all(c, jobs).values() for e in evals}
    assert len(before) == 5

    beater.nodes.clear()
    c.wait(lambda: all(c.get(f"/v1/node/{n}")["Status"] == "down" for n in nodes), timeout=15)
    down = {j: [e for e in evals if e["ID"] not in before] for j, evals in settled_all(c, jobs).items()}
    for j in jobs:
        assert all(a["ClientStatus"] == "lost" for a in c.get(f"/v1/job/{j}/allocations")), j
    beater.nodes.update(nodes)
    c.wait(lambda: all(c.get(f"/v1/node/{n}")["Status"] == "ready" for n in nodes))
    evals = {j: [e for e in es if e["ID"] not in before] for j, es in settled_all(c, jobs).items()}

    all_evals = [e for es in evals.values() for e in es]
    assert len(all_evals) == 20, evals
    assert all(e["TriggeredBy"] == "node-update" for e in all_evals)
    for j in jobs:
        assert sorted(e["NodeID"] for e in evals[j]) == ["a", "a", "b", "b"], evals[j]
        assert sorted(e["NodeID"] for e in down[j]) == ["a", "b"]
    assert all(e["Status"] in ("complete", "canceled") for e in all_evals), all_evals
    assert all(e["NextEval"] == e["BlockedEval"] == "" == e["PreviousEval"] for e in all_evals)
    assert all(e["FailedTGAllocs"] == {} for e in all_evals)
    for j in jobs:
        allocs = c.get(f"/v1/job/{j}/allocations")
        old = {a["ID"] for a in originals[j]}
        assert all(a["ClientStatus"] == "lost" for a in allocs if a["ID"] in old)
        back = [a for a in allocs if a["ID"] not in old]
        assert sorted(a["NodeID"] for a in back) == nodes, allocs
        assert all(a["DesiredStatus"] == "run" for a in back)
    assert all(len(evals_of(c, j)) == 5 for j in jobs)

    c.http.put("/v1/system/gc").raise_for_status()
    c.wait(
        lambda: [
            e
            for e in c.get("/v1/evaluations", namespace="*")
            if e["JobID"] == "force-gc" and e["Status"] == "complete"
        ]
    )
    live = {
        a["EvalID"] for j in jobs for a in c.get(f"/v1/job/{j}/allocations") if a["ClientStatus"] != "lost"
    }
    left = {e["ID"] for j in jobs for e in evals_of(c, j)}
    collected = {e["ID"] for e in all_evals} - left
    assert collected and left <= live, (left, live)
    assert all(a["ClientStatus"] != "lost" for j in jobs for a in c.get(f"/v1/job/{j}/allocations"))
