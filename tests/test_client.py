"""The client agent end to end: real agent processes running real commands (raw_exec) against
every service as its own process. Heartbeat TTLs are shortened to seconds."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.model.durations import SECOND as S

from .cluster import Cluster
from .prefork import Process, spawn

# Seconds a new agent process has to register and report ready. A deadline for start-up (a
# Python process importing the client on a machine running other tests' services), not a
# figure under test: at 15 s, an agent under a loaded suite once had not yet started.
AGENT_START = 45

ENV = {"DROVER_HEARTBEAT_MIN_TTL": "1", "DROVER_HEARTBEAT_GRACE": "1", "DROVER_FAILOVER_HEARTBEAT_TTL": "5"}


class Agents:
    def __init__(self, cluster: Cluster, tmp: Path) -> None:
        self.cluster = cluster
        self.tmp = tmp
        self.procs: dict[str, Process] = {}

    def start(self, name: str, *flags: str) -> None:
        self.procs[name] = spawn(
            "drover.client",
            [
                "--api",
                str(self.cluster.http.base_url),
                "--data-dir",
                str(self.tmp / name),
                "--name",
                name,
                *flags,
            ],
            self.cluster.env(),
            self.tmp / f"agent-{name}.log",
        )

    def node_id(self, name: str) -> str:
        path = self.tmp / name / "client" / "node-id"
        self.cluster.wait(path.exists, timeout=AGENT_START)
        return path.read_text().strip()

    def start_ready(self, name: str, *flags: str) -> str:
        """Start the agent `name` and wait until its node is ready; its node ID."""
        self.start(name, *flags)
        node_id = self.node_id(name)
        c = self.cluster
        c.wait(
            lambda: [n for n in c.get("/v1/nodes") if n["ID"] == node_id and n["Status"] == "ready"],
            timeout=AGENT_START,
        )
        return node_id

    def stop(self, name: str) -> None:
        p = self.procs.pop(name)
        p.send_signal(signal.SIGTERM)
        p.wait(10)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.tmp.glob("agent-*.log"))
        )

    def close(self) -> None:
        for name in list(self.procs):
            self.stop(name)
        kill_executors(self.tmp)


def kill_executors(under: Path) -> None:
    """Kill the executors started under `under`, with their tasks. An executor outlives its
    agent by design (its task runs on across the agent's restart): a test's own would run on
    after it, a `sleep 300` for five minutes. Each is its task's process group leader."""
    mark = str(under).encode() + b"/"
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"drover.client.executor" in cmd and mark in cmd:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(proc.name), signal.SIGKILL)


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, env=ENV).start()
    yield c
    c.stop()


@pytest.fixture
def agents(cluster: Cluster, tmp_path: Path) -> Iterator[Agents]:
    a = Agents(cluster, tmp_path)
    yield a
    a.close()


def service_job(job_id: str, task: dict[str, Any], count: int = 1, **group: Any) -> dict[str, Any]:
    """A service job of one group "g" running one task "t" (100 MHz, 32 MB) described by `task`
    (Driver, Config, ...); `group` adds group members (Update, RestartPolicy, ...)."""
    return {
        "Job": {
            "ID": job_id,
            "Datacenters": ["dc1"],
            "Type": "service",
            "TaskGroups": [
                {
                    "Name": "g",
                    "Count": count,
                    "Tasks": [{"Name": "t", "Resources": {"CPU": 100, "MemoryMB": 32}, **task}],
                    **group,
                }
            ],
        }
    }


def raw_exec_job(job_id: str, command: str, *args: str, count: int = 1, **group: Any) -> dict[str, Any]:
    task = {"Driver": "raw_exec", "Config": {"command": command, "args": list(args)}, "KillTimeout": 2 * S}
    return service_job(job_id, task, count, **group)


def allocs(c: Cluster, job_id: str) -> list[dict[str, Any]]:
    return c.get(f"/v1/job/{job_id}/allocations")


def test_a_real_command_runs_and_its_node_is_fingerprinted(
    cluster: Cluster, agents: Agents, tmp_path: Path
) -> None:
    c = cluster
    agents.start("a1", "--enable-raw-exec", "--meta", "rack=r1")
    node_id = agents.node_id("a1")
    c.wait(
        lambda: [n for n in c.get("/v1/nodes") if n["ID"] == node_id and n["Status"] == "ready"],
        timeout=AGENT_START,
    )
    node = c.get(f"/v1/node/{node_id}")
    assert node["Name"] == "a1" and node["Meta"] == {"rack": "r1"}
    for attr in (
        "cpu.arch",
        "cpu.totalcompute",
        "kernel.name",
        "os.name",
        "unique.hostname",
        "unique.network.ip-address",
        "driver.raw_exec",
    ):
        assert node["Attributes"].get(attr), attr
    assert node["NodeResources"]["Cpu"]["CpuShares"] > 0 and node["NodeResources"]["Memory"]["MemoryMB"] > 0
    # its networks: the default route's interface (or loopback), each address aliased "default"
    networks = node["NodeResources"]["Networks"]
    assert networks and networks[0]["IP"] == node["Attributes"]["unique.network.ip-address"]
    aliases = {a["Alias"] for n in node["NodeResources"]["NodeNetworks"] for a in n["Addresses"]}
    assert "default" in aliases
    assert (node["NodeResources"]["MinDynamicPort"], node["NodeResources"]["MaxDynamicPort"]) == (
        20000,
        32000,
    )

    c.put("/v1/jobs", raw_exec_job("sleeper", "/bin/sh", "-c", "echo hello from $NOMAD_TASK_NAME; sleep 60"))
    (alloc,) = c.wait(lambda: [a for a in allocs(c, "sleeper") if a["ClientStatus"] == "running"], timeout=15)
    assert alloc["NodeID"] == node_id
    events = [e["Type"] for e in alloc["TaskStates"]["t"]["Events"]]
    assert events[:3] == ["Received", "Task Setup", "Started"]
    log = tmp_path / "a1" / "allocs" / alloc["ID"] / "alloc" / "logs" / "t.stdout.0"
    c.wait(lambda: log.exists() and "hello from t" in log.read_text())

    # Deregister: the agent kills the process (kill timeout) and reports the alloc complete.
    c.http.delete("/v1/job/sleeper")
    done = c.wait(
        lambda: (a := c.get(f"/v1/allocation/{alloc['ID']}"))["ClientStatus"] == "complete" and a, timeout=15
    )
    assert done["TaskStates"]["t"]["State"] == "dead" and not done["TaskStates"]["t"]["Failed"]


def test_a_failing_command_is_restarted_locally_then_rescheduled_on_another_node(
    cluster: Cluster, agents: Agents
) -> None:
    c = cluster
    for name in ("a1", "a2"):
        agents.start(name, "--enable-raw-exec")
    c.wait(lambda: len([n for n in c.get("/v1/nodes") if n["Status"] == "ready"]) == 2, timeout=AGENT_START)
    # No deployment (max_parallel 0): the timeline is the reschedule block's alone (failures
    # inside a deployment: test_deployment_health).
    job = raw_exec_job(
        "crasher", "/bin/sh", "-c", "exit 1",
        Update={"MaxParallel": 0},
        RestartPolicy={"Attempts": 1, "Interval": 600 * S, "Delay": S // 5, "Mode": "fail"},
        ReschedulePolicy={"Attempts": 1, "Interval": 3600 * S, "Delay": 5 * S, "DelayFunction": "constant", "Unlimited": False},
    )  # fmt: skip
    c.put("/v1/jobs", job)
    first = c.wait(lambda: [a for a in allocs(c, "crasher") if a["ClientStatus"] == "failed"], timeout=20)[0]
    task = first["TaskStates"]["t"]
    assert task["Restarts"] == 1 and task["Failed"] is True  # one local restart, then failed
    kinds = [e["Type"] for e in task["Events"]]
    assert "Restarting" in kinds and kinds[-1] == "Not Restarting"

    replacement = c.wait(
        lambda: [a for a in allocs(c, "crasher") if a.get("PreviousAllocation") == first["ID"]], timeout=20
    )[0]
    assert replacement["NodeID"] != first["NodeID"]  # a different node is preferred
    assert len(replacement["RescheduleTracker"]["Events"]) == 1
    # The replacement fails too, and attempts 1 allows no more.
    c.wait(lambda: c.get(f"/v1/allocation/{replacement['ID']}")["ClientStatus"] == "failed", timeout=20)
    time.sleep(3)
    assert len(allocs(c, "crasher")) == 2, agents.logs()


def test_a_stopped_agents_allocs_are_lost_and_replaced_elsewhere(cluster: Cluster, agents: Agents) -> None:
    c = cluster
    agents.start("a1", "--enable-raw-exec")
    c.wait(lambda: [n for n in c.get("/v1/nodes") if n["Status"] == "ready"], timeout=AGENT_START)
    c.put("/v1/jobs", raw_exec_job("web", "/bin/sleep", "60"))
    (first,) = c.wait(lambda: [a for a in allocs(c, "web") if a["ClientStatus"] == "running"], timeout=15)
    agents.start("a2", "--enable-raw-exec")
    a2 = agents.node_id("a2")
    c.wait(
        lambda: [n for n in c.get("/v1/nodes") if n["ID"] == a2 and n["Status"] == "ready"],
        timeout=AGENT_START,
        describe=lambda: (a2, [(n["ID"], n["Name"], n["Status"]) for n in c.get("/v1/nodes")]),
    )

    agents.stop("a1")
    c.wait(lambda: c.get(f"/v1/node/{first['NodeID']}")["Status"] == "down", timeout=15)
    c.wait(lambda: c.get(f"/v1/allocation/{first['ID']}")["ClientStatus"] == "lost", timeout=15)
    running = c.wait(
        lambda: [a for a in allocs(c, "web") if a["ClientStatus"] == "running" and a["NodeID"] == a2],
        timeout=20,
    )
    assert running[0]["ID"] != first["ID"]


def test_a_driver_the_nodes_do_not_enable_is_refused_with_its_reason(
    cluster: Cluster, agents: Agents
) -> None:
    c = cluster
    agents.start("plain")  # raw_exec disabled, as by default
    c.wait(lambda: [n for n in c.get("/v1/nodes") if n["Status"] == "ready"], timeout=AGENT_START)
    resp = c.put("/v1/jobs", raw_exec_job("needs-raw", "/bin/true"))
    evaluation = c.wait(
        lambda: (e := c.get(f"/v1/evaluation/{resp['EvalID']}"))["Status"] == "complete" and e
    )
    failed = evaluation["FailedTGAllocs"]["g"]
    assert failed["ConstraintFiltered"] == {"missing drivers": 1}
    assert evaluation["BlockedEval"]
    # and a config with keys raw_exec does not have is refused at register, every key named
    bad = raw_exec_job("typo", "/bin/true")
    bad["Job"]["TaskGroups"][0]["Tasks"][0]["Config"]["argz"] = ["x"]
    bad["Job"]["TaskGroups"][0]["Tasks"][0]["Config"]["image"] = "redis"
    r = c.http.put("/v1/jobs", json=bad)
    assert r.status_code == 400 and 'unknown key "argz"' in r.text and 'unknown key "image"' in r.text


def test_a_restarted_agent_picks_up_the_tasks_it_was_running(
    database_url: str, nats_url: str, tmp_path: Path, js_fresh: object
) -> None:
    # TTLs of 10-20 s here: the agent must be back before its node is missed, even on a busy CI.
    c = Cluster(database_url, nats_url, tmp_path, env={**ENV, "DROVER_HEARTBEAT_MIN_TTL": "10"}).start()
    agents = Agents(c, tmp_path)
    try:
        _restarted_agent(c, agents, tmp_path)
    finally:
        agents.close()
        c.stop()


def _restarted_agent(c: Cluster, agents: Agents, tmp_path: Path) -> None:
    agents.start("a1", "--enable-raw-exec")
    c.wait(lambda: [n for n in c.get("/v1/nodes") if n["Status"] == "ready"], timeout=AGENT_START)
    marker = tmp_path / "go"
    # runs until the marker appears, then exits 3 (a service task: restarted per the block)
    script = f"while [ ! -e {marker} ]; do sleep 0.1; done; rm {marker}; exit 3"
    c.put("/v1/jobs", raw_exec_job("steady", "/bin/sh", "-c", script, Update={"MaxParallel": 0}))
    (alloc,) = c.wait(lambda: [a for a in allocs(c, "steady") if a["ClientStatus"] == "running"], timeout=15)
    state = tmp_path / "a1" / "client" / "state.json"
    pid = c.wait(
        lambda: (
            state.exists()
            and json.loads(state.read_text()).get(alloc["ID"], {}).get("Tasks", {}).get("t", {}).get("pid")
        )
    )

    agents.procs["a1"].kill()  # kill -9: no goodbye, the task's executor lives on
    agents.procs.pop("a1").wait()
    os.kill(pid, 0)  # still running
    agents.start("a1", "--enable-raw-exec")
    c.wait(lambda: "re-attached" in (tmp_path / "agent-a1.log").read_text(), timeout=AGENT_START)
    task = c.get(f"/v1/allocation/{alloc['ID']}")["TaskStates"]["t"]
    assert task["State"] == "running" and task["Restarts"] == 0  # picked up, not started again

    marker.touch()  # now the task exits 3: the new agent sees the exit code and restarts it

    def restarted() -> dict[str, Any] | None:
        t = c.get(f"/v1/allocation/{alloc['ID']}")["TaskStates"]["t"]
        return t if t["Restarts"] == 1 else None

    task = c.wait(restarted, timeout=30)
    assert any(e["Type"] == "Terminated" and e["Details"].get("exit_code") == "3" for e in task["Events"])
