"""Deployments driven by alloc health, end to end with real agents (mock driver): the agents
judge health from task states (min_healthy_time), the deployment watcher moves the deployment
on, and a failed alloc of a service job with an update block is replaced (progress-based) until
its reschedule attempts run out, which fails the deployment - as Nomad does."""

from __future__ import annotations

from typing import Any

from drover.model.durations import SECOND as S

from .cluster import Cluster
from .test_client import AGENT_START, Agents, agents, allocs, cluster, service_job  # noqa: F401 - fixtures


def mock_job(job_id: str, count: int, config: dict[str, Any], **group: Any) -> dict[str, Any]:
    return service_job(job_id, {"Driver": "mock", "Config": config}, count, **group)


def deployment(c: Cluster, job_id: str) -> dict[str, Any]:
    d: dict[str, Any] = c.get(f"/v1/job/{job_id}/deployment")
    return d


def test_healthy_allocs_complete_the_deployment_and_failed_ones_are_replaced_until_it_fails(
    cluster: Cluster,  # noqa: F811
    agents: Agents,  # noqa: F811
) -> None:
    c = cluster
    for name in ("a1", "a2"):
        agents.start(name)
    c.wait(lambda: len([n for n in c.get("/v1/nodes") if n["Status"] == "ready"]) == 2, timeout=AGENT_START)

    # Healthy: the update block's defaults but a 1 s min_healthy_time.
    c.put("/v1/jobs", mock_job("steady", 2, {"run_for": "10m"}, Update={"MinHealthyTime": S}))
    # Failing after 2 s, before it could be healthy (3 s); no local restarts; one reschedule.
    c.put(
        "/v1/jobs",
        mock_job(
            "flaky", 1, {"run_for": "2s", "exit_code": 1},
            Update={"MinHealthyTime": 3 * S},
            RestartPolicy={"Attempts": 0, "Interval": 600 * S, "Delay": S, "Mode": "fail"},
            ReschedulePolicy={"Attempts": 1, "Interval": 3600 * S, "Delay": 5 * S, "DelayFunction": "constant", "Unlimited": False},
        ),
    )  # fmt: skip

    d = c.wait(
        lambda: (d := deployment(c, "steady")) and d["Status"] == "successful" and d,
        timeout=30,
        describe=lambda: deployment(c, "steady"),
    )
    assert d["StatusDescription"] == "Deployment completed successfully"
    assert d["TaskGroups"]["g"]["HealthyAllocs"] == 2 and d["TaskGroups"]["g"]["DesiredTotal"] == 2
    assert d["TaskGroups"]["g"]["RequireProgressBy"]
    steady = allocs(c, "steady")
    assert len(steady) == 2 and all(a["DeploymentStatus"]["Healthy"] is True for a in steady)
    assert all(a["DeploymentID"] == d["ID"] for a in steady)
    triggers = {e["TriggeredBy"] for e in c.get("/v1/job/steady/evaluations")}
    assert "deployment-watcher" in triggers
    assert [x["ID"] for x in c.get("/v1/deployment/allocations/" + d["ID"])] == sorted(
        a["ID"] for a in steady
    )
    assert c.get(f"/v1/deployment/{d['ID']}")["JobID"] == "steady"

    failed = c.wait(
        lambda: (d := deployment(c, "flaky")) and d["Status"] == "failed" and d,
        timeout=30,
        describe=lambda: (deployment(c, "flaky"), allocs(c, "flaky")),
    )
    assert failed["StatusDescription"] == "Failed due to unhealthy allocations"
    flaky = sorted(allocs(c, "flaky"), key=lambda a: a["CreateIndex"])
    assert len(flaky) == 2, flaky  # the original and one replacement: attempts 1
    first, second = flaky
    assert first["DeploymentStatus"]["Healthy"] is False and first["DesiredTransition"]["Reschedule"] is True
    assert second["PreviousAllocation"] == first["ID"] and second["NodeID"] != first["NodeID"]
    assert second["DeploymentStatus"]["Healthy"] is False
    assert failed["TaskGroups"]["g"]["UnhealthyAllocs"] == 2
    unhealthy = [e for e in first["TaskStates"]["t"]["Events"] if e["Type"] == "Alloc Unhealthy"]
    assert unhealthy and unhealthy[0]["DisplayMessage"] == "Unhealthy because of failed task"

    # A job with no deployment reads as null, as in Nomad; an unknown one is 404.
    c.put("/v1/jobs", mock_job("plain", 1, {"run_for": "10m"}, Update={"MaxParallel": 0}))
    assert c.http.get("/v1/job/plain/deployment").json() is None
    assert c.http.get("/v1/job/nope/deployment").status_code == 404
    assert c.http.get("/v1/deployment/nope").status_code == 404


def test_auto_revert_rolls_a_failed_deployment_back_to_the_last_stable_version(
    cluster: Cluster,  # noqa: F811
    agents: Agents,  # noqa: F811
) -> None:
    c = cluster
    agents.start("a1")
    c.wait(lambda: [n for n in c.get("/v1/nodes") if n["Status"] == "ready"], timeout=AGENT_START)
    # No progress deadline: the first unhealthy alloc fails the deployment.
    update = {"MinHealthyTime": S, "AutoRevert": True, "ProgressDeadline": 0}
    c.put("/v1/jobs", mock_job("rev", 1, {"run_for": "10m"}, Update=update))
    c.wait(lambda: (d := deployment(c, "rev")) and d["Status"] == "successful", timeout=30)
    c.wait(lambda: c.get("/v1/job/rev")["Stable"] is True)

    # Version 1 fails at once: its deployment fails and version 0 comes back as version 2.
    restart = {"Attempts": 0, "Interval": 600 * S, "Delay": S, "Mode": "fail"}
    c.put(
        "/v1/jobs",
        mock_job("rev", 1, {"run_for": "200ms", "exit_code": 1}, Update=update, RestartPolicy=restart),
    )
    failed = c.wait(
        lambda: [
            d for d in c.get("/v1/job/rev/deployments") if d["JobVersion"] == 1 and d["Status"] == "failed"
        ],
        timeout=30,
        describe=lambda: c.get("/v1/job/rev/deployments"),
    )[0]
    assert (
        failed["StatusDescription"] == "Failed due to unhealthy allocations - rolling back to job version 0"
    )
    job = c.wait(lambda: (j := c.get("/v1/job/rev"))["Version"] == 2 and j)
    assert job["TaskGroups"][0]["Tasks"][0]["Config"] == {"run_for": "10m"}
    c.wait(
        lambda: [
            d
            for d in c.get("/v1/job/rev/deployments")
            if d["JobVersion"] == 2 and d["Status"] == "successful"
        ],
        timeout=30,
        describe=lambda: c.get("/v1/job/rev/deployments"),
    )
    running = [a for a in allocs(c, "rev") if a["ClientStatus"] == "running" and a["DesiredStatus"] == "run"]
    assert [a["JobVersion"] for a in running] == [2]
    versions = {v["Version"]: v["Stable"] for v in c.get("/v1/job/rev/versions")["Versions"]}
    assert versions == {0: True, 1: False, 2: True}


def test_operators_promote_pause_and_fail_deployments(
    cluster: Cluster,  # noqa: F811
    agents: Agents,  # noqa: F811
) -> None:
    c = cluster
    agents.start("a1")
    c.wait(lambda: [n for n in c.get("/v1/nodes") if n["Status"] == "ready"], timeout=AGENT_START)
    update = {"MaxParallel": 1, "Canary": 1, "MinHealthyTime": S}

    def latest(version: int) -> dict[str, Any] | None:
        return next((d for d in c.get("/v1/job/can/deployments") if d["JobVersion"] == version), None)

    c.put("/v1/jobs", mock_job("can", 2, {"run_for": "10m"}, Update=update))
    first = c.wait(lambda: (d := latest(0)) and d["Status"] == "successful" and d, timeout=30)
    r = c.http.put(f"/v1/deployment/promote/{first['ID']}", json={"All": True})
    assert r.status_code == 400 and "terminal status" in r.text

    # A new version: one canary, then the operator's word.
    c.put("/v1/jobs", mock_job("can", 2, {"run_for": "11m"}, Update=update))
    d1 = c.wait(lambda: latest(1), timeout=15)
    assert d1["StatusDescription"] == "Deployment is running but requires manual promotion"
    paused = c.put(f"/v1/deployment/pause/{d1['ID']}", {"Pause": True})
    d = c.get(f"/v1/deployment/{d1['ID']}")
    assert (d["Status"], d["StatusDescription"]) == ("paused", "Deployment is paused") and paused["Index"]
    c.put(f"/v1/deployment/pause/{d1['ID']}", {"Pause": False})
    d = c.get(f"/v1/deployment/{d1['ID']}")
    assert (d["Status"], d["StatusDescription"]) == (
        "running",
        "Deployment is running but requires manual promotion",
    )

    def canary_healthy() -> bool:
        return any(
            (a.get("DeploymentStatus") or {}).get("Canary") and a["DeploymentStatus"].get("Healthy")
            for a in allocs(c, "can")
        )

    c.wait(canary_healthy, timeout=20)
    promoted = c.put(f"/v1/deployment/promote/{d1['ID']}", {"All": True})
    assert promoted["EvalID"]
    c.wait(lambda: (d := latest(1)) and d["Status"] == "successful", timeout=30, describe=lambda: latest(1))
    live = [a for a in allocs(c, "can") if a["DesiredStatus"] == "run" and a["ClientStatus"] == "running"]
    assert sorted(a["JobVersion"] for a in live) == [1, 1]

    # Fail by hand; bad requests refused.
    c.put("/v1/jobs", mock_job("can", 2, {"run_for": "12m"}, Update=update))
    d2 = c.wait(lambda: latest(2), timeout=15)
    assert c.http.put(f"/v1/deployment/pause/{d2['ID']}", json={"Pause": "yes"}).status_code == 400
    assert c.http.put(f"/v1/deployment/promote/{d2['ID']}", json={}).status_code == 400
    assert c.http.put("/v1/deployment/fail/no-such-deployment").status_code == 404
    c.put(f"/v1/deployment/fail/{d2['ID']}", {})
    d = c.get(f"/v1/deployment/{d2['ID']}")
    assert (d["Status"], d["StatusDescription"]) == ("failed", "Deployment marked as failed")
    assert c.http.put(f"/v1/deployment/fail/{d2['ID']}").status_code == 400  # terminal now
