"""Native service discovery end to end: every service as its own process and real agents
(raw_exec, network_interface "lo") whose tasks serve HTTP on the port the scheduler gave
them. Their `provider = "nomad"` services are registered once the tasks run, at the port's
address, read through /v1/services, /v1/service/:name (tags, choose, blocking queries), a
job's and an alloc's services and the event stream's Service topic, and removed when the
alloc stops, when an operator deletes one, and by the servers when the node goes down. Their
http and tcp checks run on the agent: served by /v1/client/allocation/:id/checks, deciding the
deployment health of the alloc, restarting its task with check_restart."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import nomad
import pytest

from drover.model.durations import SECOND as S
from drover.model.serviceregistration import ServiceRegistration, choose

from .cluster import Cluster
from .test_client import AGENT_START, ENV, Agents, allocs

RUN = 60
SERVE = "exec python3 -m http.server --bind 127.0.0.1 ${NOMAD_PORT_http}"


@pytest.fixture(scope="module")
def setup(
    module_database_url: str,
    nats_url: str,
    module_streams_fresh: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Cluster, Agents, Path]]:
    tmp = tmp_path_factory.mktemp("services")
    (tmp / "agent.hcl").write_text(
        'client { network_interface = "lo" }\nplugin "raw_exec" { config { enabled = true } }\n'
    )
    c = Cluster(module_database_url, nats_url, tmp, env={**ENV, "DROVER_HEARTBEAT_MIN_TTL": "3"}).start()
    agents = Agents(c, tmp)
    try:
        agents.start_ready("a1", "--config", str(tmp / "agent.hcl"))
        yield c, agents, tmp
    finally:
        agents.close()
        c.stop()


def web_job(job_id: str, count: int = 1, node_id: str = "", script: str = SERVE) -> dict[str, Any]:
    """A service job: a group service and a task service on the group's dynamic port."""
    group: dict[str, Any] = {
        "Name": "g",
        "Count": count,
        "Networks": [{"DynamicPorts": [{"Label": "http"}]}],
        "Services": [
            {"Name": f"{job_id}-web", "PortLabel": "http", "Provider": "nomad", "Tags": ["v1", "web"]}
        ],
        "Tasks": [
            {
                "Name": "srv",
                "Driver": "raw_exec",
                "Config": {"command": "/bin/sh", "args": ["-c", script]},
                "Resources": {"CPU": 100, "MemoryMB": 64},
                "KillTimeout": 2 * S,
                "Services": [
                    {"Name": f"{job_id}-api", "PortLabel": "http", "Provider": "nomad", "Tags": ["api"]},
                ],
            }
        ],
    }
    if node_id:
        group["Constraints"] = [{"LTarget": "${node.unique.id}", "RTarget": node_id, "Operand": "="}]
    return {
        "Job": {"ID": job_id, "Datacenters": ["dc1"], "Update": {"MaxParallel": 0}, "TaskGroups": [group]}
    }


def running(c: Cluster, job_id: str, n: int = 1) -> list[dict[str, Any]]:
    return c.wait(
        lambda: (r := [a for a in allocs(c, job_id) if a["ClientStatus"] == "running"]) and len(r) == n and r,
        RUN,
        describe=lambda: allocs(c, job_id),
    )


def registrations(c: Cluster, name: str, n: int) -> list[dict[str, Any]]:
    return c.wait(
        lambda: len(r := c.get(f"/v1/service/{name}")) == n and r,
        RUN,
        describe=lambda: c.get(f"/v1/service/{name}"),
    )


def blocking(c: Cluster, path: str, index: int) -> tuple[threading.Thread, dict[str, Any]]:
    """A blocking query on `path` after `index`, in a thread: its answer and how long it took."""
    out: dict[str, Any] = {}

    def run() -> None:
        t = time.monotonic()
        with httpx.Client(base_url=c.http.base_url, timeout=90) as http:  # a client of its own
            r = http.get(path, params={"index": index, "wait": "60s"})
        out.update(
            status=r.status_code,
            body=r.json(),
            index=int(r.headers["X-Nomad-Index"]),
            took=time.monotonic() - t,
        )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_services_are_registered_once_running_and_removed_when_the_alloc_stops(
    setup: tuple[Cluster, Agents, Path],
) -> None:
    c, _, _ = setup
    index = int(c.http.get("/v1/services").headers["X-Nomad-Index"])
    waiter, woken = blocking(c, "/v1/service/shop-web", index)
    time.sleep(0.5)
    assert waiter.is_alive()  # nothing registered yet: it waits

    c.put("/v1/jobs", web_job("shop"))
    (alloc,) = running(c, "shop")
    (web,) = registrations(c, "shop-web", 1)
    port = next(p for p in alloc["AllocatedResources"]["Shared"]["Ports"] if p["Label"] == "http")
    assert web == {
        "ID": f"_nomad-task-{alloc['ID']}-group-g-shop-web-http",
        "ServiceName": "shop-web", "Namespace": "default", "NodeID": alloc["NodeID"], "Datacenter": "dc1",
        "JobID": "shop", "AllocID": alloc["ID"], "Tags": ["v1", "web"], "Address": port["HostIP"],
        "Port": port["Value"], "CreateIndex": web["CreateIndex"], "ModifyIndex": web["ModifyIndex"],
    }  # fmt: skip
    assert web["Address"] == "127.0.0.1" and web["CreateIndex"] > index
    # The blocking query was woken by the registration.
    waiter.join(30)
    assert woken["status"] == 200 and woken["took"] < 50, woken
    assert [s["ID"] for s in woken["body"]] == [web["ID"]]
    # What is registered answers at its address.
    c.wait(lambda: _answers(web["Address"], web["Port"]), RUN)
    (api,) = registrations(c, "shop-api", 1)
    assert api["ID"] == f"_nomad-task-{alloc['ID']}-srv-shop-api-http" and api["Port"] == web["Port"]

    listed = next(ns for ns in c.get("/v1/services") if ns["Namespace"] == "default")
    assert {"ServiceName": "shop-web", "Tags": ["v1", "web"]} in listed["Services"]
    assert {"ServiceName": "shop-api", "Tags": ["api"]} in listed["Services"]
    assert [ns["Namespace"] for ns in c.get("/v1/services", namespace="*")] == ["default"]
    assert c.get("/v1/services", namespace="other") == []
    assert sorted(s["ServiceName"] for s in c.get("/v1/job/shop/services")) == ["shop-api", "shop-web"]
    assert sorted(s["ID"] for s in c.get(f"/v1/allocation/{alloc['ID']}/services")) == sorted(
        [web["ID"], api["ID"]]
    )
    assert c.get("/v1/service/shop-web", tag="v1") == [web]
    assert c.get("/v1/service/shop-web", tag="nope") == []
    assert c.http.get("/v1/job/nope/services").status_code == 404
    assert c.http.get("/v1/allocation/nope/services").status_code == 404
    r = c.http.get("/v1/service/shop-web", params={"choose": "x|key"})
    assert r.status_code == 400 and "choose" in r.text

    # Stopped: its services go (the agent removes them; a blocking query sees it).
    index = int(c.http.get("/v1/service/shop-web").headers["X-Nomad-Index"])
    waiter, woken = blocking(c, "/v1/service/shop-web", index)
    assert c.http.delete("/v1/job/shop").status_code == 200
    waiter.join(60)
    assert woken["status"] == 200 and woken["body"] == [] and woken["index"] > index, woken
    c.wait(lambda: c.get("/v1/service/shop-api") == [], RUN)
    assert not [
        ns
        for ns in c.get("/v1/services")
        if any(s["ServiceName"].startswith("shop-") for s in ns["Services"])
    ]


def _answers(address: str, port: int) -> bool:
    try:
        return httpx.get(f"http://{address}:{port}/", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_choose_and_delete(setup: tuple[Cluster, Agents, Path]) -> None:
    c, _, _ = setup
    c.put("/v1/jobs", web_job("many", count=3, script="sleep 300"))
    regs = registrations(c, "many-web", 3)
    models = [ServiceRegistration.model_validate(r) for r in regs]
    for n, key in ((1, "alloc-a"), (2, "alloc-b"), (5, "alloc-c")):
        chosen = c.get("/v1/service/many-web", choose=f"{n}|{key}")
        assert [r["ID"] for r in chosen] == [r.id for r in choose(models, n, key)]
        assert len(chosen) == min(n, 3)
        assert c.get("/v1/service/many-web", choose=f"{n}|{key}") == chosen  # stable

    gone = regs[0]
    path = f"/v1/service/many-web/{gone['ID']}"
    assert c.http.delete(f"/v1/service/other/{gone['ID']}").status_code == 404
    r = c.http.delete(path)
    assert r.status_code == 200 and int(r.headers["X-Nomad-Index"]) > gone["ModifyIndex"]
    assert [s["ID"] for s in c.get("/v1/service/many-web")] == [s["ID"] for s in regs[1:]]
    assert c.http.delete(path).status_code == 404
    assert c.http.delete("/v1/job/many?purge=true").status_code == 200
    c.wait(lambda: c.get("/v1/service/many-web") == [], RUN)


def test_the_event_stream_carries_registrations_and_removals(setup: tuple[Cluster, Agents, Path]) -> None:
    c, _, _ = setup
    start = int(c.http.get("/v1/services").headers["X-Nomad-Index"])
    c.put("/v1/jobs", web_job("streamed", script="sleep 300"))
    (web,) = registrations(c, "streamed-web", 1)
    assert c.http.delete("/v1/job/streamed").status_code == 200
    c.wait(lambda: c.get("/v1/service/streamed-web") == [], RUN)
    seen: list[tuple[str, str]] = []
    with httpx.stream(
        "GET", f"{c.http.base_url}/v1/event/stream", params={"index": start, "topic": "Service:streamed"},
        timeout=30,
    ) as r:  # fmt: skip
        assert r.status_code == 200
        for line in r.iter_lines():
            frame = json.loads(line)
            for e in frame.get("Events") or []:
                assert e["Topic"] == "Service" and "streamed" in e["FilterKeys"]
                seen.append((e["Type"], e["Key"]))
                assert e["Payload"]["Service"]["ServiceName"].startswith("streamed-")
            if ("ServiceDeregistration", web["ID"]) in seen:
                break
    assert ("ServiceRegistration", web["ID"]) in seen
    assert seen.index(("ServiceRegistration", web["ID"])) < seen.index(("ServiceDeregistration", web["ID"]))
    # A service's name filters too: the api service's events are not sent.
    keys: list[tuple[str, str]] = []
    with httpx.stream(
        "GET", f"{c.http.base_url}/v1/event/stream", params={"index": start, "topic": "Service:streamed-web"},
        timeout=30,
    ) as r:  # fmt: skip
        for line in r.iter_lines():
            keys.extend((e["Type"], e["Key"]) for e in json.loads(line).get("Events") or [])
            if ("ServiceDeregistration", web["ID"]) in keys:
                break
    assert keys == [("ServiceRegistration", web["ID"]), ("ServiceDeregistration", web["ID"])]
    # python-nomad (which has no service calls of its own) subscribes to the topic alike.
    client = nomad.Nomad(address=str(c.http.base_url).rstrip("/"), timeout=30)
    thread, stop, queue = client.event.stream.get_stream(index=start, topic="Service:streamed-web")
    thread.daemon = True
    thread.start()
    got: list[tuple[str, str]] = []
    deadline = time.monotonic() + 30
    while len(got) < 2 and time.monotonic() < deadline:
        got.extend((e["Type"], e["Payload"]["Service"]["ID"]) for e in queue.get(timeout=30)["Events"])
    stop.set()
    assert got == keys


def test_a_down_nodes_services_are_removed_by_the_servers(setup: tuple[Cluster, Agents, Path]) -> None:
    c, agents, tmp = setup
    agents.start("a2", "--config", str(tmp / "agent.hcl"))
    a2 = agents.node_id("a2")
    c.wait(lambda: [n for n in c.get("/v1/nodes") if n["ID"] == a2 and n["Status"] == "ready"], AGENT_START)
    c.put("/v1/jobs", web_job("lonely", node_id=a2, script="sleep 300"))
    (web,) = registrations(c, "lonely-web", 1)
    assert web["NodeID"] == a2
    # The agent goes without a word: only the servers can remove what it registered.
    proc = agents.procs.pop("a2")
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    c.wait(lambda: c.get(f"/v1/node/{a2}")["Status"] == "down", RUN)
    assert c.get("/v1/service/lonely-web") == []
    assert c.get("/v1/service/lonely-api") == []


def checked_job(job_id: str, path: str, deadline: int = 60, **check: Any) -> dict[str, Any]:
    """A service job in a deployment judged by its checks: an http check of the task's server."""
    job = web_job(job_id)
    group = job["Job"]["TaskGroups"][0]
    group["Services"][0]["Checks"] = [
        {"Name": "alive", "Type": "http", "Path": path, "Interval": S, "Timeout": S, **check}
    ]
    job["Job"]["Update"] = {"MaxParallel": 1, "HealthCheck": "checks", "MinHealthyTime": S,
                            "HealthyDeadline": deadline * S, "ProgressDeadline": (deadline + 60) * S}  # fmt: skip
    return job


def health(c: Cluster, job_id: str) -> Any:
    (alloc,) = allocs(c, job_id)
    return (alloc.get("DeploymentStatus") or {}).get("Healthy"), alloc


def test_a_passing_check_makes_the_alloc_healthy(setup: tuple[Cluster, Agents, Path]) -> None:
    c, _, _ = setup
    c.put("/v1/jobs", checked_job("healthy", "/"))
    (alloc,) = running(c, "healthy")
    checks = c.wait(lambda: (r := c.get(f"/v1/client/allocation/{alloc['ID']}/checks")) and r, RUN)
    ((check_id, result),) = checks.items()
    assert len(check_id) == 64 and result["ID"] == check_id
    assert (result["Mode"], result["Group"], result["Service"], result["Check"]) == (
        "healthiness",
        alloc["Name"],
        "healthy-web",
        "alive",
    )
    assert "Task" not in result  # a group service's check
    healthy, alloc = c.wait(lambda: (h := health(c, "healthy"))[0] is not None and h, RUN)
    assert healthy is True, alloc
    result = c.get(f"/v1/client/allocation/{alloc['ID']}/checks")[check_id]
    assert (result["Status"], result["StatusCode"], result["Output"]) == ("success", 200, "nomad: http ok")
    c.wait(lambda: c.get("/v1/job/healthy/deployment")["Status"] == "successful", RUN)
    assert c.http.delete("/v1/job/healthy?purge=true").status_code == 200


def test_a_failing_check_makes_the_alloc_unhealthy(setup: tuple[Cluster, Agents, Path]) -> None:
    c, _, _ = setup
    c.put("/v1/jobs", checked_job("sick", "/missing", deadline=5))
    (alloc,) = running(c, "sick")
    healthy, alloc = c.wait(lambda: (h := health(c, "sick"))[0] is not None and h, RUN)
    assert healthy is False, alloc
    path = f"/v1/client/allocation/{alloc['ID']}/checks"
    result = c.wait(lambda: "StatusCode" in (r := next(iter(c.get(path).values()))) and r, RUN)  # answered
    assert (result["Status"], result["StatusCode"]) == ("failure", 404)
    events = [e for ts in alloc["TaskStates"].values() for e in ts["Events"]]
    unhealthy = [e for e in events if e["Type"] == "Alloc Unhealthy"]
    assert unhealthy and "Services not healthy by deadline" in unhealthy[0].values(), events
    assert c.http.delete("/v1/job/sick?purge=true").status_code == 200


def test_a_failing_check_fails_the_deployment_and_auto_revert_rolls_back(
    setup: tuple[Cluster, Agents, Path],
) -> None:
    """A new version whose check fails: its alloc is unhealthy, the deployment fails, and
    auto_revert registers the last stable version again (its check passing)."""
    c, _, _ = setup
    good = checked_job("revert", "/", deadline=5)
    good["Job"]["Update"]["AutoRevert"] = True
    c.put("/v1/jobs", good)
    c.wait(lambda: (c.get("/v1/job/revert/deployment") or {}).get("Status") == "successful", RUN)
    assert c.get("/v1/job/revert")["Stable"] is True
    bad = checked_job("revert", "/missing", deadline=5)
    bad["Job"]["Update"]["AutoRevert"] = True
    bad["Job"]["TaskGroups"][0]["Tasks"][0]["Env"] = {"VERSION": "2"}  # a new alloc, not an in-place update
    # An unhealthy alloc fails the deployment once no progress is made by the deadline (it may be
    # rescheduled meanwhile, as in Nomad).
    bad["Job"]["Update"]["ProgressDeadline"] = 10 * S
    c.put("/v1/jobs", bad)

    def reverted() -> Any:
        job = c.get("/v1/job/revert")
        return job["Version"] >= 2 and job

    job = c.wait(reverted, RUN, describe=lambda: c.get("/v1/job/revert/deployments"))
    assert job["TaskGroups"][0]["Services"][0]["Checks"][0]["Path"] == "/"
    failed = [d for d in c.get("/v1/job/revert/deployments") if d["JobVersion"] == 1]
    assert failed and failed[0]["Status"] == "failed", failed
    assert "rolling back to job version 0" in failed[0]["StatusDescription"], failed[0]
    assert c.http.delete("/v1/job/revert?purge=true").status_code == 200


def test_check_restart_restarts_the_task_after_its_limit(setup: tuple[Cluster, Agents, Path]) -> None:
    c, _, _ = setup
    job = web_job("flaky")
    task = job["Job"]["TaskGroups"][0]["Tasks"][0]
    task["Services"][0]["Checks"] = [{"Name": "api", "Type": "tcp", "PortLabel": "admin", "Interval": S,
                                      "Timeout": S, "CheckRestart": {"Limit": 2, "Grace": S}}]  # fmt: skip
    job["Job"]["TaskGroups"][0]["Networks"][0]["DynamicPorts"].append({"Label": "admin"})  # nothing listens
    c.put("/v1/jobs", job)
    (alloc,) = running(c, "flaky")

    def restarted() -> Any:
        ts = c.get(f"/v1/allocation/{alloc['ID']}")["TaskStates"]["srv"]
        return ts["Restarts"] >= 1 and ts

    ts = c.wait(restarted, RUN)
    signaled = [e for e in ts["Events"] if e["Type"] == "Restart Signaled"]
    assert signaled and 'healthcheck: check "api" unhealthy' in signaled[0].values(), ts["Events"]
    result = next(iter(c.get(f"/v1/client/allocation/{alloc['ID']}/checks").values()))
    assert result["Status"] == "failure" and result["Task"] == "srv" and "StatusCode" not in result
    assert c.http.delete("/v1/job/flaky?purge=true").status_code == 200


PROBED = """
import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        ok = self.headers.get("X-Probe") == "yes" and body == b"ping"
        self.send_response(200 if ok else 418)
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(os.environ["NOMAD_PORT_http"])), H).serve_forever()
"""


def test_http_checks_send_their_method_headers_and_body(setup: tuple[Cluster, Agents, Path]) -> None:
    c, _, _ = setup
    job = web_job("probed")
    task = job["Job"]["TaskGroups"][0]["Tasks"][0]
    task["Config"] = {"command": "python3", "args": ["-c", PROBED]}
    probe = {"Type": "http", "Path": "/p", "Method": "POST", "Interval": S, "Timeout": S, "Body": "ping"}
    task["Services"][0]["Checks"] = [
        {**probe, "Name": "right", "Header": {"X-Probe": ["yes"]}},
        {**probe, "Name": "wrong", "Header": {"X-Probe": ["no"]}, "OnUpdate": "ignore"},
    ]
    c.put("/v1/jobs", job)
    (alloc,) = running(c, "probed")

    def results() -> Any:
        r = {v["Check"]: v for v in c.get(f"/v1/client/allocation/{alloc['ID']}/checks").values()}
        return all("StatusCode" in v for v in r.values()) and r  # the server answered both

    checks = c.wait(results, RUN)
    assert (checks["right"]["Status"], checks["right"]["StatusCode"], checks["right"]["Mode"]) == (
        "success", 200, "healthiness")  # fmt: skip
    assert (checks["wrong"]["Status"], checks["wrong"]["StatusCode"], checks["wrong"]["Mode"]) == (
        "failure", 418, "readiness")  # fmt: skip
    assert checks["right"]["Task"] == "srv" and checks["right"]["Service"] == "probed-api"
    assert c.http.delete("/v1/job/probed?purge=true").status_code == 200


def test_an_in_place_update_reaches_the_running_alloc(setup: tuple[Cluster, Agents, Path]) -> None:
    """A new job version the scheduler updates in place (services and checks only): the same
    alloc re-registers its services as now defined, drops the removed one, and runs the check
    added; a check redefined replaces the old one's results."""
    c, _, _ = setup
    job = web_job("inplace")
    c.put("/v1/jobs", job)
    (alloc,) = running(c, "inplace")
    (web,) = registrations(c, "inplace-web", 1)
    registrations(c, "inplace-api", 1)
    assert web["Tags"] == ["v1", "web"] and c.get(f"/v1/client/allocation/{alloc['ID']}/checks") == {}

    group = job["Job"]["TaskGroups"][0]
    group["Services"][0]["Tags"] = ["v2"]
    group["Services"][0]["Checks"] = [
        {"Name": "alive", "Type": "http", "Path": "/", "Interval": S, "Timeout": S}
    ]
    group["Services"].append({"Name": "inplace-new", "PortLabel": "http", "Provider": "nomad"})
    group["Tasks"][0]["Services"] = []
    c.put("/v1/jobs", job)
    c.wait(lambda: c.get("/v1/service/inplace-web")[0]["Tags"] == ["v2"], RUN)
    (added,) = registrations(c, "inplace-new", 1)
    assert added["AllocID"] == alloc["ID"] and added["Port"] == web["Port"]
    (updated,) = allocs(c, "inplace")
    assert (updated["ID"], updated["JobVersion"]) == (alloc["ID"], 1)
    (now,) = c.get("/v1/service/inplace-web")
    assert now["ID"] == web["ID"] and now["ModifyIndex"] > web["ModifyIndex"]
    c.wait(lambda: c.get("/v1/service/inplace-api") == [], RUN)
    path = f"/v1/client/allocation/{alloc['ID']}/checks"
    (result,) = c.wait(lambda: [r for r in c.get(path).values() if r["Status"] == "success"], RUN)
    assert (result["Check"], result["StatusCode"]) == ("alive", 200)

    # Its path changed: a check of another ID, its own results.
    group["Services"][0]["Checks"][0]["Path"] = "/missing"
    c.put("/v1/jobs", job)
    (redefined,) = c.wait(lambda: [r for r in c.get(path).values() if r.get("StatusCode") == 404], RUN)
    assert redefined["ID"] != result["ID"] and redefined["Status"] == "failure"
    assert list(c.get(path)) == [redefined["ID"]]
    (updated,) = allocs(c, "inplace")
    assert (updated["ID"], updated["JobVersion"]) == (alloc["ID"], 2)
    assert c.http.delete("/v1/job/inplace?purge=true").status_code == 200


def test_an_alloc_updated_in_place_is_judged_for_its_new_deployment(
    setup: tuple[Cluster, Agents, Path],
) -> None:
    """A count raised with a service's tags changed: the running alloc, updated in place, joins
    the new deployment, and the agent judges its health for it again (by its check)."""
    c, _, _ = setup
    job = checked_job("joined", "/")
    c.put("/v1/jobs", job)
    first = c.wait(
        lambda: (d := c.get("/v1/job/joined/deployment")) and d["Status"] == "successful" and d, RUN
    )
    (alloc,) = allocs(c, "joined")
    group = job["Job"]["TaskGroups"][0]
    group["Count"] = 2
    group["Services"][0]["Tags"] = ["v2"]
    c.put("/v1/jobs", job)

    def succeeded() -> Any:
        d = c.get("/v1/job/joined/deployment")
        return d["ID"] != first["ID"] and d["Status"] == "successful" and d

    second = c.wait(succeeded, RUN, describe=lambda: c.get("/v1/job/joined/deployment"))
    assert second["TaskGroups"]["g"]["HealthyAllocs"] == 2
    kept = next(a for a in allocs(c, "joined") if a["ID"] == alloc["ID"])
    assert kept["DeploymentID"] == second["ID"] and kept["DeploymentStatus"]["Healthy"] is True
    assert kept["JobVersion"] == 1
    c.wait(lambda: sorted(r["Tags"][0] for r in c.get("/v1/service/joined-web")) == ["v2", "v2"], RUN)
    assert c.http.delete("/v1/job/joined?purge=true").status_code == 200
