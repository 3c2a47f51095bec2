"""Script checks end to end: every service as its own process and a real agent (raw_exec) that
runs a nomad service's `script` checks in their task - a process with the task's environment in
its directory, the command and arguments interpolated - once the task runs and every interval:
exit 0 passing, 1 warning, anything else critical, a timeout critical, the output kept. They
decide deployment health as the http and tcp checks do (a warning only with on_update
"ignore_warnings"), are served by /v1/client/allocation/:id/checks, and check_restart restarts
their task."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.model.durations import SECOND as S

from .cluster import Cluster
from .test_client import ENV, Agents, allocs

RUN = 60


@pytest.fixture(scope="module")
def setup(
    module_database_url: str,
    nats_url: str,
    module_streams_fresh: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Cluster, Path]]:
    tmp = tmp_path_factory.mktemp("scripts")
    (tmp / "agent.hcl").write_text(
        'client { network_interface = "lo" }\nplugin "raw_exec" { config { enabled = true } }\n'
    )
    c = Cluster(module_database_url, nats_url, tmp, env={**ENV, "DROVER_HEARTBEAT_MIN_TTL": "10"}).start()
    agents = Agents(c, tmp)
    try:
        agents.start_ready("a1", "--config", str(tmp / "agent.hcl"))
        yield c, tmp
    finally:
        agents.close()
        c.stop()


def script(name: str, shell: str, **extra: Any) -> dict[str, Any]:
    """A script check running `shell` with /bin/sh, every second within a second."""
    return {"Name": name, "Type": "script", "Command": "/bin/sh", "Args": ["-c", shell],
            "Interval": S, "Timeout": S, **extra}  # fmt: skip


def scripted_job(
    job_id: str, group_checks: list[dict[str, Any]], task_checks: list[dict[str, Any]], deadline: int = 60
) -> dict[str, Any]:
    """A job whose task writes local/ready and a probe script, then sleeps; a group service and
    a task service carry the checks, and the deployment is judged by them."""
    task_script = (
        "printf '#!/bin/sh\\necho probe $1\\n' > local/probe.sh; chmod +x local/probe.sh; "
        "touch local/ready; exec sleep 300"
    )
    group = {
        "Name": "g",
        "Networks": [{"DynamicPorts": [{"Label": "http"}]}],
        "Services": [
            {"Name": f"{job_id}-web", "PortLabel": "http", "Provider": "nomad", "Checks": group_checks}
        ],
        "Tasks": [
            {
                "Name": "srv",
                "Driver": "raw_exec",
                "Config": {"command": "/bin/sh", "args": ["-c", task_script]},
                "Resources": {"CPU": 100, "MemoryMB": 32},
                "KillTimeout": S,
                "Services": [{"Name": f"{job_id}-api", "Provider": "nomad", "Checks": task_checks}],
            }
        ],
    }
    update = {"MaxParallel": 1, "HealthCheck": "checks", "MinHealthyTime": S,
              "HealthyDeadline": deadline * S, "ProgressDeadline": (deadline + 60) * S}  # fmt: skip
    return {"Job": {"ID": job_id, "Datacenters": ["dc1"], "Update": update, "TaskGroups": [group]}}


def running(c: Cluster, job_id: str) -> dict[str, Any]:
    return c.wait(
        lambda: next((a for a in allocs(c, job_id) if a["ClientStatus"] == "running"), None),
        RUN,
        describe=lambda: allocs(c, job_id),
    )


def health(c: Cluster, job_id: str) -> tuple[bool | None, dict[str, Any]]:
    (alloc,) = allocs(c, job_id)
    return (alloc.get("DeploymentStatus") or {}).get("Healthy"), alloc


def results(c: Cluster, alloc_id: str) -> dict[str, dict[str, Any]]:
    """The alloc's latest check results by check name."""
    return {r["Check"]: r for r in c.get(f"/v1/client/allocation/{alloc_id}/checks").values()}


def test_script_checks_report_by_exit_code_and_decide_health(setup: tuple[Cluster, Path]) -> None:
    c, tmp = setup
    job = scripted_job(
        "scripted",
        [
            script("ready", "test -f local/ready && echo ready $NOMAD_ALLOC_ID in $PWD", TaskName="srv"),
            # A warning counts as passing only where on_update ignores warnings.
            script("degraded", "echo degraded; exit 1", TaskName="srv", OnUpdate="ignore_warnings"),
            script("broken", "echo broken >&2; exit 2", TaskName="srv", OnUpdate="ignore"),
            script("slow", "sleep 5", TaskName="srv", OnUpdate="ignore"),
        ],
        # The command and its arguments take the task's environment.
        [{"Name": "probe", "Type": "script", "Command": "${NOMAD_TASK_DIR}/probe.sh",
          "Args": ["${NOMAD_PORT_http}"], "Interval": S, "Timeout": S}],
    )  # fmt: skip
    c.put("/v1/jobs", job)
    alloc = running(c, "scripted")
    healthy, alloc = c.wait(lambda: (h := health(c, "scripted"))[0] is not None and h, RUN)
    assert healthy is True, alloc
    port = next(p["Value"] for p in alloc["AllocatedResources"]["Shared"]["Ports"] if p["Label"] == "http")
    task_dir = (tmp / "a1" / "allocs" / alloc["ID"] / "srv").resolve()
    got = c.wait(
        lambda: (r := results(c, alloc["ID"]))["slow"]["Output"] != "nomad: waiting to run" and r, RUN
    )
    assert {name: (r["Status"], r["Mode"]) for name, r in got.items()} == {
        "ready": ("success", "healthiness"),
        "degraded": ("warning", "healthiness"),
        "broken": ("failure", "readiness"),
        "slow": ("failure", "readiness"),
        "probe": ("success", "healthiness"),
    }
    assert got["ready"]["Output"] == f"ready {alloc['ID']} in {task_dir}\n"
    assert (got["degraded"]["Output"], got["broken"]["Output"]) == ("degraded\n", "broken\n")
    assert got["slow"]["Output"] == "context deadline exceeded"
    assert got["probe"]["Output"] == f"probe {port}\n"
    assert got["probe"]["Task"] == "srv" and got["probe"]["Service"] == "scripted-api"
    assert "Task" not in got["ready"] and "StatusCode" not in got["ready"]  # a group service's check
    c.wait(lambda: c.get("/v1/job/scripted/deployment")["Status"] == "successful", RUN)
    assert c.http.delete("/v1/job/scripted?purge=true").status_code == 200


def test_a_failing_script_check_makes_the_alloc_unhealthy(setup: tuple[Cluster, Path]) -> None:
    c, _ = setup
    c.put("/v1/jobs", scripted_job("scriptsick", [], [script("down", "echo down; exit 2")], deadline=5))
    alloc = running(c, "scriptsick")
    healthy, alloc = c.wait(lambda: (h := health(c, "scriptsick"))[0] is not None and h, RUN)
    assert healthy is False, alloc
    result = results(c, alloc["ID"])["down"]
    assert (result["Status"], result["Output"], result["Task"]) == ("failure", "down\n", "srv")
    events = [e for ts in alloc["TaskStates"].values() for e in ts["Events"]]
    unhealthy = [e for e in events if e["Type"] == "Alloc Unhealthy"]
    assert unhealthy and "Services not healthy by deadline" in unhealthy[0].values(), events
    assert c.http.delete("/v1/job/scriptsick?purge=true").status_code == 200


def test_check_restart_restarts_the_task_of_a_failing_script_check(setup: tuple[Cluster, Path]) -> None:
    c, _ = setup
    restart = {"Limit": 2, "Grace": S}
    job = scripted_job("scriptflaky", [script("group", "exit 2", TaskName="srv", CheckRestart=restart)], [])
    job["Job"]["Update"] = {"MaxParallel": 0}
    c.put("/v1/jobs", job)
    alloc = running(c, "scriptflaky")

    def restarted() -> Any:
        ts = c.get(f"/v1/allocation/{alloc['ID']}")["TaskStates"]["srv"]
        return ts["Restarts"] >= 1 and ts

    ts = c.wait(restarted, RUN)
    signaled = [e for e in ts["Events"] if e["Type"] == "Restart Signaled"]
    assert signaled and 'healthcheck: check "group" unhealthy' in signaled[0].values(), ts["Events"]
    # Not counted against its restart block, and it runs again (its check with it).
    c.wait(lambda: c.get(f"/v1/allocation/{alloc['ID']}")["TaskStates"]["srv"]["State"] == "running", RUN)
    assert results(c, alloc["ID"])["group"]["Status"] == "failure"
    assert c.http.delete("/v1/job/scriptflaky?purge=true").status_code == 200


def test_a_group_script_check_must_name_its_task(setup: tuple[Cluster, Path]) -> None:
    c, _ = setup
    r = c.http.put("/v1/jobs", json=scripted_job("unnamed", [script("where", "true")], []))
    assert r.status_code == 400
    assert "Service [g]->unnamed-web or Check where must specify task parameter" in r.text
    assert c.http.get("/v1/job/unnamed").status_code == 404
