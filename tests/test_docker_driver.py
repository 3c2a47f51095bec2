"""The docker driver end to end: every service as its own process, a real agent with the docker
driver and a real Docker engine running images built here (deploy/images). A job serving HTTP
on a dynamic port answers at its NOMAD_ADDR_http, its output reaches `drover alloc logs`, an
alloc restart is a new container, an agent killed -9 and started again leaves the container
running, `job stop` removes it; an OOM kill, a missing image and a refused privileged task
each end as Nomad says; an image no task uses any more is removed after the GC's delay."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from drover.model.durations import SECOND as S

from .cluster import Cluster
from .containers import docker_client, images
from .prefork import run_drover
from .test_client import AGENT_START, ENV, Agents, allocs

RUN = 90  # seconds for a placement and a container start on a loaded host
HTTPD = "drover/httpd:local"


@pytest.fixture(scope="module")
def engine() -> Any:
    client = docker_client()
    images("httpd")
    return client


class Setup:
    def __init__(self, c: Cluster, agents: Agents, tmp: Path, engine: Any, node_id: str) -> None:
        self.c, self.agents, self.tmp, self.engine, self.node_id = c, agents, tmp, engine, node_id

    def containers(self, alloc_id: str) -> list[Any]:
        label = f"com.hashicorp.nomad.alloc_id={alloc_id}"
        return self.engine.containers.list(all=True, filters={"label": label}, ignore_removed=True)


def agent_config(tmp: Path, name: str, gc: str) -> Path:
    path = tmp / f"{name}.hcl"
    (tmp / "volume").mkdir(exist_ok=True)
    path.write_text(
        f"""
        client {{
          network_interface = "lo"
          node_class = "{name}"
          gc_interval = "1s"
          host_volume "data" {{ path = "{tmp / "volume"}" }}
        }}
        plugin "docker" {{ config {{ gc {{ {gc} }} }} }}
        """
    )
    return path


@pytest.fixture(scope="module")
def setup(
    engine: Any,
    module_database_url: str,
    nats_url: str,
    module_streams_fresh: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("docker")
    # The shared images must outlive this module's jobs: image GC stays off on this agent.
    config = agent_config(tmp, "docker", "image = false")
    c = Cluster(module_database_url, nats_url, tmp, env={**ENV, "DROVER_HEARTBEAT_MIN_TTL": "10"}).start()
    agents = Agents(c, tmp)
    node_ids: list[str] = []
    try:
        agents.start("a1", "--config", str(config))
        node_ids.append(agents.node_id("a1"))
        c.wait(
            lambda: [n for n in c.get("/v1/nodes") if n["ID"] == node_ids[0] and n["Status"] == "ready"],
            AGENT_START,
        )
        yield Setup(c, agents, tmp, engine, node_ids[0])
    finally:
        agents.close()
        c.stop()
        # Containers outlive their agent by design: this module's go with it.
        for node_id in {*node_ids, *(p.read_text().strip() for p in tmp.glob("*/client/node-id"))}:
            for cont in engine.containers.list(
                all=True, filters={"label": f"com.hashicorp.nomad.node_id={node_id}"}
            ):
                with contextlib.suppress(Exception):
                    cont.remove(force=True)


def docker_job(
    job_id: str, config: dict[str, Any], job_type: str = "service", **extra: Any
) -> dict[str, Any]:
    task = {
        "Name": "web",
        "Driver": "docker",
        "Config": config,
        "Resources": {"CPU": 100, "MemoryMB": 64},
        "KillTimeout": 2 * S,
        **extra.pop("task", {}),
    }
    group = {
        "Name": "g",
        "Count": 1,
        "Tasks": [task],
        # On the module's agent (node class "docker") unless the test names another.
        "Constraints": [{"LTarget": "${node.class}", "RTarget": "docker", "Operand": "="}],
        "Networks": [{"DynamicPorts": [{"Label": "http"}]}],
        "RestartPolicy": {"Attempts": 0, "Mode": "fail"},
        "ReschedulePolicy": {"Attempts": 0, "Unlimited": False},
        **extra,
    }
    return {"Job": {"ID": job_id, "Type": job_type, "Datacenters": ["dc1"], "TaskGroups": [group]}}


SERVE = {"image": HTTPD, "command": "serve", "args": ["${NOMAD_PORT_http}"], "ports": ["http"]}


def running(c: Cluster, job_id: str) -> dict[str, Any]:
    return c.wait(
        lambda: next((a for a in allocs(c, job_id) if a["ClientStatus"] == "running"), None),
        RUN,
        describe=lambda: allocs(c, job_id),
    )


def ended(c: Cluster, job_id: str) -> dict[str, Any]:
    return c.wait(
        lambda: next((a for a in allocs(c, job_id) if a["ClientStatus"] in ("complete", "failed")), None),
        RUN,
        describe=lambda: allocs(c, job_id),
    )


def address(c: Cluster, alloc_id: str) -> str:
    alloc = c.get(f"/v1/allocation/{alloc_id}")
    port = next(p for p in alloc["AllocatedResources"]["Shared"]["Ports"] if p["Label"] == "http")
    return f"{port['HostIP']}:{port['Value']}"


def get_ok(addr: str, timeout: float = 30) -> httpx.Response:
    """GET http://addr/ until it answers (the server in the container may take a moment)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            r = httpx.get(f"http://{addr}/", timeout=5)
            if r.status_code == 200:
                return r
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def cli(c: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NOMAD_ADDR": str(c.http.base_url)}
    return run_drover(list(args), env, 60)


def test_fingerprint_names_the_engine(setup: Setup) -> None:
    node = setup.c.get(f"/v1/node/{setup.node_id}")
    version = setup.engine.version()["Version"]
    assert node["Attributes"]["driver.docker"] == "1"
    assert node["Attributes"]["driver.docker.version"] == version
    assert node["Drivers"]["docker"]["Detected"] and node["Drivers"]["docker"]["Healthy"]


def test_a_docker_job_serves_restarts_survives_its_agent_and_stops(setup: Setup) -> None:
    c = setup.c
    c.put("/v1/jobs", docker_job("web", SERVE))
    alloc = running(c, "web")
    addr = address(c, alloc["ID"])
    assert get_ok(addr).text == "hello from drover/httpd\n"

    # The container: named and labelled as Nomad's, the alloc's port published on its address.
    (cont,) = setup.containers(alloc["ID"])
    assert cont.name == f"web-{alloc['ID']}"
    labels = cont.labels
    assert labels["com.hashicorp.nomad.job_name"] == "web"
    assert labels["com.hashicorp.nomad.task_name"] == "web"
    assert labels["com.hashicorp.nomad.task_group_name"] == "g"
    assert labels["com.hashicorp.nomad.node_id"] == setup.node_id
    assert labels["com.hashicorp.nomad.namespace"] == "default"
    env = dict(e.split("=", 1) for e in cont.attrs["Config"]["Env"])
    assert env["NOMAD_ADDR_http"] == addr and env["NOMAD_ALLOC_DIR"] == "/alloc"
    assert cont.attrs["HostConfig"]["Memory"] == 64 * 1024 * 1024
    assert cont.attrs["HostConfig"]["CpuShares"] == 100

    # Its resource usage as the engine measures it (what the Nomad Autoscaler's APM reads).
    usage = c.get(f"/v1/client/allocation/{alloc['ID']}/stats")["Tasks"]["web"]["ResourceUsage"]
    assert usage["MemoryStats"]["Usage"] > 0 and "Usage" in usage["MemoryStats"]["Measured"]
    assert usage["CpuStats"]["Measured"] == ["Throttled Periods", "Throttled Time", "Percent"]

    # Its output in Drover's logs: the server's start line, and a line for the request.
    out = c.wait(lambda: (r := cli(c, "alloc", "logs", alloc["ID"], "web")).stdout and r, 30)
    assert f"serving /srv/www on port {addr.rsplit(':', 1)[1]}" in out.stdout
    err = c.wait(lambda: (r := cli(c, "alloc", "logs", "-stderr", alloc["ID"], "web")).stdout and r, 30)
    assert "response:200" in err.stdout, err.stdout

    # alloc restart: a new container, serving again.
    first = cont.id
    assert cli(c, "alloc", "restart", alloc["ID"], "web").returncode == 0

    def restarted() -> Any:
        conts = [x for x in setup.containers(alloc["ID"]) if x.status == "running"]
        return conts[0] if conts and conts[0].id != first else None

    cont = c.wait(restarted, RUN)
    assert get_ok(addr).status_code == 200
    c.wait(lambda: c.get(f"/v1/allocation/{alloc['ID']}")["TaskStates"]["web"]["State"] == "running", RUN)
    assert [x.id for x in setup.containers(alloc["ID"])] == [cont.id]  # the old one removed

    # The agent killed -9 and started again: the same container runs on, untouched.
    started_at = cont.attrs["State"]["StartedAt"]
    setup.agents.procs["a1"].kill()
    setup.agents.procs.pop("a1").wait()
    assert get_ok(addr).status_code == 200  # served while no agent runs
    setup.agents.start("a1", "--config", str(setup.tmp / "docker.hcl"))
    log = setup.tmp / "agent-a1.log"
    c.wait(lambda: f"running alloc {alloc['ID']} (web.g[0]) (re-attached)" in log.read_text(), AGENT_START)
    cont.reload()
    assert cont.status == "running" and cont.attrs["State"]["StartedAt"] == started_at
    assert [x.id for x in setup.containers(alloc["ID"])] == [cont.id]
    got = c.get(f"/v1/allocation/{alloc['ID']}")
    assert got["ClientStatus"] == "running" and got["TaskStates"]["web"]["Restarts"] == 1
    # What the container wrote while no agent ran, and after the re-attach, reaches the logs,
    # each line once: at least 4 requests served (one by the first container, three or more by
    # the second: a request the client retries is served twice), each line naming the client's
    # own port, so a line written twice would show as a repeat.
    get_ok(addr)

    def served() -> list[str]:
        return [
            x
            for x in cli(c, "alloc", "logs", "-stderr", alloc["ID"], "web").stdout.splitlines()
            if "response:200" in x
        ]

    c.wait(lambda: len(served()) >= 4, 30)
    time.sleep(1)
    lines = served()
    assert len(lines) == len(set(lines)) >= 4, lines

    # job stop: the container is stopped and removed.
    c.http.delete("/v1/job/web").raise_for_status()
    c.wait(lambda: not setup.containers(alloc["ID"]), RUN, describe=lambda: setup.containers(alloc["ID"]))
    c.wait(lambda: c.get(f"/v1/allocation/{alloc['ID']}")["TaskStates"]["web"]["State"] == "dead", RUN)


def events(c: Cluster, alloc_id: str, task: str = "web") -> list[dict[str, Any]]:
    return c.get(f"/v1/allocation/{alloc_id}")["TaskStates"][task]["Events"]


def test_a_task_past_its_memory_limit_is_oom_killed(setup: Setup) -> None:
    c = setup.c
    # `tail` keeps a line in memory until its end: /dev/zero has none.
    config = {"image": HTTPD, "command": "sh", "args": ["-c", "tail /dev/zero"]}
    c.put(
        "/v1/jobs",
        docker_job("oom", config, job_type="batch", task={"Resources": {"CPU": 100, "MemoryMB": 32}}),
    )
    alloc = ended(setup.c, "oom")
    assert alloc["ClientStatus"] == "failed"
    terminated = next(e for e in events(c, alloc["ID"]) if e["Type"] == "Terminated")
    assert terminated["Details"]["oom_killed"] == "true"
    assert terminated["DisplayMessage"] == 'Exit Code: 137, Exit Message: "OOM Killed"'


def test_a_missing_image_fails_with_a_clear_event_and_the_restart_policy(setup: Setup) -> None:
    c = setup.c
    image = f"drover/no-such-image-{uuid.uuid4().hex[:8]}:local"
    policy = {"Attempts": 1, "Interval": 60 * S, "Delay": 1 * S, "Mode": "fail"}
    c.put("/v1/jobs", docker_job("noimage", {"image": image}, job_type="batch", RestartPolicy=policy))
    alloc = ended(c, "noimage")
    assert alloc["ClientStatus"] == "failed"
    kinds = [(e["Type"], e["DisplayMessage"]) for e in events(c, alloc["ID"])]
    failures = [m for t, m in kinds if t == "Driver Failure"]
    assert len(failures) == 2 and all(m.startswith(f"Failed to pull `{image}`") for m in failures), kinds
    assert [t for t, _ in kinds if t in ("Restarting", "Not Restarting")] == ["Restarting", "Not Restarting"]
    assert not any("Traceback" in m for _, m in kinds)


def test_privileged_is_refused_unless_the_agent_allows_it(setup: Setup) -> None:
    c = setup.c
    c.put("/v1/jobs", docker_job("priv", {"image": HTTPD, "privileged": True}, job_type="batch"))
    alloc = ended(c, "priv")
    kinds = [(e["Type"], e["DisplayMessage"]) for e in events(c, alloc["ID"])]
    assert any(
        t == "Driver Failure" and "Docker privileged mode is disabled on this Nomad agent" in m
        for t, m in kinds
    )
    assert alloc["ClientStatus"] == "failed" and not setup.containers(alloc["ID"])


def test_unused_images_and_dangling_containers_are_collected(setup: Setup) -> None:
    c, engine = setup.c, setup.engine
    probe = f"drover/gc-probe-{uuid.uuid4().hex[:8]}:local"
    engine.images.get(HTTPD).tag(probe)
    dangling = 'dangling_containers { period = "1s"\ncreation_grace = "1s" }'
    config = agent_config(setup.tmp, "gc", f'image = true\nimage_delay = "1s"\n{dangling}')
    setup.agents.start("gc", "--config", str(config))
    try:
        # A container labelled for the node that no task owns (an agent killed between creating
        # it and saving its ID leaves one) is removed once past the creation grace.
        label = {
            "com.hashicorp.nomad.node_id": setup.agents.node_id("gc"),
            "com.hashicorp.nomad.alloc_id": "x",
        }
        left = engine.containers.create(HTTPD, labels=label, name=f"left-{uuid.uuid4().hex[:8]}")
        other = engine.containers.create(HTTPD, labels={**label, "com.hashicorp.nomad.node_id": "another"})
        job = docker_job(
            "gcjob",
            {**SERVE, "image": probe},
            Constraints=[{"LTarget": "${node.class}", "RTarget": "gc", "Operand": "="}],
        )
        c.put("/v1/jobs", job)
        alloc = running(c, "gcjob")
        get_ok(address(c, alloc["ID"]))
        assert engine.images.list(name=probe.split(":")[0])
        c.http.delete("/v1/job/gcjob").raise_for_status()
        c.wait(lambda: not engine.images.list(name=probe.split(":")[0]), 60)
        assert engine.images.get(HTTPD)  # the image under the removed tag is still there
        c.wait(lambda: not engine.containers.list(all=True, filters={"id": left.id}), 60)
        # Another node's is not touched.
        other.reload()
    finally:
        with contextlib.suppress(Exception):
            engine.images.remove(probe)
        with contextlib.suppress(Exception):
            other.remove(force=True)


def test_a_stop_sends_the_kill_signal_then_kills_after_the_kill_timeout(setup: Setup) -> None:
    c = setup.c
    # One task traps its kill_signal (USR1) and exits; the other ignores it (sh as PID 1 takes
    # no default action) and is killed once its kill_timeout (2 s) has passed.
    trap = {
        "image": HTTPD,
        "command": "sh",
        "args": ["-c", "trap 'echo got USR1; exit 0' USR1; while :; do sleep 0.1; done"],
    }
    deaf = {"image": HTTPD, "command": "sh", "args": ["-c", "trap '' USR1; while :; do sleep 0.1; done"]}
    for job_id, config in (("trap", trap), ("deaf", deaf)):
        c.put("/v1/jobs", docker_job(job_id, config, task={"KillSignal": "SIGUSR1"}))
    allocs_ = {job_id: running(c, job_id) for job_id in ("trap", "deaf")}
    for job_id in allocs_:
        c.http.delete(f"/v1/job/{job_id}").raise_for_status()
    took = {}
    for job_id, alloc in allocs_.items():
        c.wait(lambda a=alloc: not setup.containers(a["ID"]), RUN)
        kinds = c.wait(
            lambda a=alloc: (
                {e["Type"]: e["Time"] for e in events(c, a["ID"])}
                if "Killed" in {e["Type"] for e in events(c, a["ID"])}
                else None
            ),
            RUN,
        )
        took[job_id] = (kinds["Killed"] - kinds["Killing"]) / S
    assert "got USR1" in cli(c, "alloc", "logs", allocs_["trap"]["ID"], "web").stdout
    assert took["trap"] < 2 <= took["deaf"], took


def test_the_task_sees_its_directories_and_host_volumes_mounted(setup: Setup) -> None:
    c = setup.c
    script = "echo from-container > /data/out; echo $NOMAD_TASK_DIR $NOMAD_ALLOC_DIR > /alloc/data/dirs; ls /local /secrets"
    job = docker_job(
        "mounts",
        {"image": HTTPD, "command": "sh", "args": ["-c", script]},
        job_type="batch",
        Volumes={"v": {"Name": "v", "Type": "host", "Source": "data"}},
        task={"VolumeMounts": [{"Volume": "v", "Destination": "/data"}]},
    )
    c.put("/v1/jobs", job)
    alloc = ended(c, "mounts")
    assert alloc["ClientStatus"] == "complete", events(c, alloc["ID"])
    assert (setup.tmp / "volume" / "out").read_text() == "from-container\n"
    alloc_dir = setup.tmp / "a1" / "allocs" / alloc["ID"]
    assert (alloc_dir / "alloc" / "data" / "dirs").read_text() == "/local /alloc\n"


def test_a_script_check_runs_in_the_container(setup: Setup) -> None:
    """A script check of a docker task is an exec in its container (Nomad's docker ExecTask):
    it sees the container's filesystem and environment; its exit code decides its status."""
    c = setup.c
    every = {"Type": "script", "Command": "sh", "Interval": S, "Timeout": S}
    checks = [
        {**every, "Name": "inside", "Args": ["-c", "test -f /.dockerenv && echo in $NOMAD_TASK_DIR"]},
        {**every, "Name": "down", "Args": ["-c", "echo down; exit 2"], "OnUpdate": "ignore"},
    ]
    service = {"Name": "dscript", "PortLabel": "http", "Provider": "nomad", "Checks": checks}
    c.put("/v1/jobs", docker_job("dscript", SERVE, task={"Services": [service]}))
    alloc = running(c, "dscript")

    def results() -> Any:
        r = {v["Check"]: v for v in c.get(f"/v1/client/allocation/{alloc['ID']}/checks").values()}
        return all(v["Output"] != "nomad: waiting to run" for v in r.values()) and r

    got = c.wait(results, RUN)
    assert (got["inside"]["Status"], got["inside"]["Output"]) == ("success", "in /local\n"), got
    assert (got["down"]["Status"], got["down"]["Output"]) == ("failure", "down\n"), got
    c.http.delete("/v1/job/dscript?purge=true").raise_for_status()
