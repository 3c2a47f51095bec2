"""The deployment-watcher trigger end to end, and a worked example: a service job
of count 3 with max_parallel 1 and canary 1 is updated and takes exactly four evals. Clients are
stood in for by `FakeClients`, which report every new alloc running and healthy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .cluster import Cluster, job_json, node_json
from .evals import NO_LINKS, FakeClients, links, settled, wait_eval, wait_trigger


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path).start()
    yield c
    c.stop()


@pytest.fixture
def clients(cluster: Cluster) -> Iterator[FakeClients]:
    f = FakeClients(str(cluster.http.base_url), healthy=True)
    yield f
    f.close()


def deployed_job(job_id: str, count: int, version: str, **update: Any) -> dict[str, Any]:
    job = job_json(job_id, count, cpu=100, mem=64)
    job["Job"]["Update"] = {"MaxParallel": 1, **update}
    job["Job"]["TaskGroups"][0]["Tasks"][0]["Config"] = {"run_for": version}
    return job


def deployment(c: Cluster, job_id: str, version: int) -> dict[str, Any] | None:
    return next((d for d in c.get(f"/v1/job/{job_id}/deployments") if d["JobVersion"] == version), None)


def successful(c: Cluster, job_id: str, version: int) -> dict[str, Any]:
    found: dict[str, Any] = c.wait(
        lambda: (d := deployment(c, job_id, version)) is not None and d["Status"] == "successful" and d,
        timeout=30,
        describe=lambda: (c.get(f"/v1/job/{job_id}/deployments"), c.get(f"/v1/job/{job_id}/evaluations")),
    )
    return found


def test_deployment_watcher(cluster: Cluster, clients: FakeClients) -> None:
    """The allocs of a deployment turn healthy: the deployment watcher writes an eval for the
    deployment, which completes it."""
    c = cluster
    c.put("/v1/drover/node/register", {"Node": node_json("n1")})
    register = wait_eval(c, c.put("/v1/jobs", deployed_job("web", 2, "10m"))["EvalID"])
    d = c.wait(lambda: deployment(c, "web", 0))
    assert register["DeploymentID"] == "" and links(register) == NO_LINKS
    (watcher,) = wait_trigger(c, "web", "deployment-watcher")
    watcher = wait_eval(c, watcher["ID"])
    assert watcher["DeploymentID"] == d["ID"]
    assert links(watcher) == NO_LINKS
    assert successful(c, "web", 0)["ID"] == d["ID"]
    assert all(a["DeploymentStatus"]["Healthy"] for a in c.get("/v1/job/web/allocations"))


def test_a_canary_update_of_max_parallel_1_takes_four_evals(cluster: Cluster, clients: FakeClients) -> None:
    """Count 3, update { max_parallel = 1, canary = 1 }. The job is
    updated: one job-register eval places the canary; when the canary is healthy the deployment
    watcher promotes it (auto_promote: no operator step) with
    one deployment-watcher eval, which replaces the next alloc; when that one is healthy, a
    second replaces the last; when the last is healthy, a third finds nothing left to do.
    Four evals in all."""
    c = cluster
    for n in ("n1", "n2"):
        c.put("/v1/drover/node/register", {"Node": node_json(n)})
    c.put("/v1/jobs", deployed_job("web", 3, "10m", Canary=1, AutoPromote=True))
    successful(c, "web", 0)
    before = {e["ID"] for e in settled(c, "web")}

    c.put("/v1/jobs", deployed_job("web", 3, "20m", Canary=1, AutoPromote=True))
    d = successful(c, "web", 1)
    evals = [e for e in settled(c, "web") if e["ID"] not in before]
    assert [e["TriggeredBy"] for e in evals] == ["job-register"] + ["deployment-watcher"] * 3, evals
    assert all(e["Status"] == "complete" and links(e) == NO_LINKS for e in evals), evals
    assert [e["DeploymentID"] for e in evals[1:]] == [d["ID"]] * 3
    # What each eval placed: the canary, then one replacement each, then nothing.
    allocs = [a for a in c.get("/v1/job/web/allocations") if a["JobVersion"] == 1]
    assert [sum(1 for a in allocs if a["EvalID"] == e["ID"]) for e in evals] == [1, 1, 1, 0]
    canary = next(a for a in allocs if a["EvalID"] == evals[0]["ID"])
    assert canary["DeploymentStatus"]["Canary"] is True
    assert d["TaskGroups"]["web"]["Promoted"] is True
    live = [a for a in c.get("/v1/job/web/allocations") if a["DesiredStatus"] == "run"]
    assert sorted(a["JobVersion"] for a in live) == [1, 1, 1]
