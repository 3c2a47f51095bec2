"""`drover sim` against the whole control plane: its nodes register, heartbeat in batches and
stay ready, run their allocs as the mock driver would, and act on restart requests as the
agent does (a job restart completes on them)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from drover.model.durations import SECOND as S
from drover.model.jobrestart import request_id
from drover.runtime.embedded import wait_for_port

from .cluster import Cluster

ENV = {"DROVER_HEARTBEAT_MIN_TTL": "3", "DROVER_HEARTBEAT_GRACE": "2"}


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, env=ENV).start()
    yield c
    c.stop()


def _sim(
    c: Cluster, stats: Path, nodes: int, *args: str, data_dir: Path | None = None
) -> subprocess.Popen[bytes]:
    """The simulator, its secret kept in `data_dir` (default: the cluster's log directory's)."""
    return subprocess.Popen(
        [sys.executable, "-m", "drover.client.sim", "--api", str(c.http.base_url), "--nodes", str(nodes),
         "--stats", str(stats), "--data-dir", str(data_dir or c.log_dir / "sim"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=c.env(),
    )  # fmt: skip


def _running(c: Cluster, job_id: str) -> list[str]:
    return [a["ID"] for a in c.get(f"/v1/job/{job_id}/allocations") if a["ClientStatus"] == "running"]


def test_simulated_nodes_heartbeat_and_run_mock_allocs(cluster: Cluster, tmp_path: Path) -> None:
    c = cluster
    stats = tmp_path / "sim.json"
    sim = _sim(c, stats, 60, "--datacenters", "2", "--racks", "6", "--drivers", "mock,docker")
    try:
        nodes = c.wait(lambda: len(n := c.get("/v1/nodes")) == 60 and n, timeout=30)
        assert {n["Datacenter"] for n in nodes} == {"dc1", "dc2"}
        node = c.get(f"/v1/node/{nodes[0]['ID']}")
        assert set(node["Drivers"]) == {"mock", "docker"} and node["Meta"]["rack"].startswith("r")
        job = {
            "Job": {
                "ID": "sims",
                "Datacenters": ["dc1", "dc2"],
                "Type": "batch",
                "TaskGroups": [
                    {
                        "Name": "g",
                        "Count": 20,
                        "Tasks": [{"Name": "t", "Driver": "docker", "Config": {"image": "x"},
                                   "Resources": {"CPU": 100, "MemoryMB": 64}}],
                    }
                ],
            }
        }  # fmt: skip
        c.put("/v1/jobs", job)
        c.wait(
            lambda: (
                len([a for a in c.get("/v1/job/sims/allocations") if a["ClientStatus"] == "running"]) == 20
            ),
            timeout=20,
        )
        # Several TTLs (3-6 s) pass: every node stays ready on batched heartbeats alone.
        time.sleep(8)
        assert all(n["Status"] == "ready" for n in c.get("/v1/nodes"))
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.communicate(timeout=30)
    report = json.loads(stats.read_text())
    assert report["nodes"] == 60 and report["heartbeat_errors"] == 0
    assert report["heartbeats"] >= 60 * 2, report  # each node beat at half its TTL
    assert report["heartbeats"] / report["heartbeat_batches"] > 5  # in batches, not one by one
    assert report["allocs_started"] == 20
    # Silent now: every node goes down.
    c.wait(lambda: all(n["Status"] == "down" for n in c.get("/v1/nodes")), timeout=40)


def test_a_job_restart_completes_on_simulated_nodes_each_alloc_signalled_once(
    cluster: Cluster, tmp_path: Path
) -> None:
    c = cluster
    stats = tmp_path / "sim.json"
    sim = _sim(c, stats, 10)
    try:
        c.wait(lambda: len(c.get("/v1/nodes")) == 10, timeout=30)
        task = {"Name": "t", "Driver": "mock", "Config": {}, "Resources": {"CPU": 100, "MemoryMB": 64}}
        # No deployment (MaxParallel 0): the restart waits for none.
        group = {"Name": "g", "Count": 12, "Tasks": [task], "Update": {"MaxParallel": 0}}
        c.put("/v1/jobs", {"Job": {"ID": "svc", "Datacenters": ["dc1"], "TaskGroups": [group]}})
        running = c.wait(lambda: len(ids := _running(c, "svc")) == 12 and ids, timeout=30)
        rid = c.put("/v1/job/svc/restart", {"BatchSize": 5, "BatchWait": 0})["RestartID"]
        r = c.wait(
            lambda: (r := c.get(f"/v1/job/svc/restart/{rid}"))["Status"] == "complete" and r, timeout=60
        )
        assert r["BatchNumber"] == 3 and r["StatusDescription"] == "Restarted 12 allocs in 3 batches"
        for alloc_id in r["RestartedAllocs"]:
            state = c.get(f"/v1/allocation/{alloc_id}")["TaskStates"]["t"]
            signals = [e for e in state["Events"] if e["Type"] == "Restart Signaled"]
            assert [e["Details"]["restart_id"] for e in signals] == [request_id(rid, alloc_id)]
            assert [e["Type"] for e in state["Events"]][-3:] == ["Terminated", "Restarting", "Started"]
            assert state["Restarts"] == 1 and state["State"] == "running"
        assert sorted(r["RestartedAllocs"]) == sorted(running)
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.communicate(timeout=30)
    assert json.loads(stats.read_text())["allocs_restarted"] == 12


def test_simulated_nodes_register_their_allocs_nomad_services(cluster: Cluster, tmp_path: Path) -> None:
    c = cluster
    sim = _sim(c, tmp_path / "sim.json", 4)
    try:
        nodes = c.wait(lambda: len(n := c.get("/v1/nodes")) == 4 and n, timeout=30)
        service = {"Name": "front", "PortLabel": "http", "Provider": "nomad", "Tags": ["sim"]}
        group = {
            "Name": "g",
            "Count": 3,
            "Networks": [{"DynamicPorts": [{"Label": "http"}]}],
            "Services": [service],
            "Tasks": [{"Name": "t", "Driver": "mock", "Resources": {"CPU": 100, "MemoryMB": 64}}],
        }
        c.put("/v1/jobs", {"Job": {"ID": "front", "Datacenters": ["dc1"], "Update": {"MaxParallel": 0},
                                   "TaskGroups": [group]}})  # fmt: skip
        regs = c.wait(lambda: len(r := c.get("/v1/service/front")) == 3 and r, timeout=30)
        ips = {n["ID"]: c.get(f"/v1/node/{n['ID']}")["NodeResources"]["Networks"][0]["IP"] for n in nodes}
        for reg in regs:
            alloc = c.get(f"/v1/allocation/{reg['AllocID']}")
            (port,) = alloc["AllocatedResources"]["Shared"]["Ports"]
            assert reg["ID"] == f"_nomad-task-{alloc['ID']}-group-g-front-http"
            assert (reg["NodeID"], reg["Address"], reg["Port"]) == (
                alloc["NodeID"],
                ips[alloc["NodeID"]],
                port["Value"],
            )
            assert reg["Tags"] == ["sim"] and reg["Datacenter"] == "dc1"
        # Updated in place (new tags, a deployment and one more alloc): the same allocs
        # register the new tags, and are judged healthy for the new deployment.
        service["Tags"] = ["sim", "v2"]
        group["Count"] = 4
        update = {"MaxParallel": 1, "MinHealthyTime": 0, "HealthyDeadline": 30 * S}
        c.put("/v1/jobs", {"Job": {"ID": "front", "Datacenters": ["dc1"], "Update": update,
                                   "TaskGroups": [group]}})  # fmt: skip
        c.wait(lambda: [r["Tags"] for r in c.get("/v1/service/front")] == [["sim", "v2"]] * 4, timeout=30)
        deployment = c.wait(
            lambda: (d := c.get("/v1/job/front/deployment")) and d["Status"] == "successful" and d, timeout=30
        )
        assert deployment["TaskGroups"]["g"]["HealthyAllocs"] == 4
        allocs = c.get("/v1/job/front/allocations")
        assert {r["AllocID"] for r in regs} < {a["ID"] for a in allocs}
        assert {a["DeploymentID"] for a in allocs} == {deployment["ID"]}
        regs = c.get("/v1/service/front")
        # One alloc stopped: its registration goes, the others stay.
        gone = regs[0]["AllocID"]
        c.put(f"/v1/allocation/{gone}/stop", {})
        c.wait(lambda: gone not in {r["AllocID"] for r in c.get("/v1/service/front")}, timeout=30)
        c.http.delete("/v1/job/front")
        c.wait(lambda: c.get("/v1/service/front") == [], timeout=30)
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.communicate(timeout=30)


def test_a_simulator_run_again_keeps_its_nodes_and_no_other_may_take_them(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Its nodes' secret is kept in its data directory: the same simulator, stopped and run
    again, still speaks for them; one with another secret is refused their IDs."""
    c = cluster

    def run(data_dir: Path) -> tuple[int, bytes, dict[str, object]]:
        stats = tmp_path / f"{data_dir.name}.json"
        sim = _sim(c, stats, 3, "--duration", "4", data_dir=data_dir)
        out, _ = sim.communicate(timeout=60)
        return sim.returncode, out, json.loads(stats.read_text()) if stats.exists() else {}

    first = run(tmp_path / "mine")
    secret = (tmp_path / "mine" / "secret-id").read_text().strip()
    assert (tmp_path / "mine" / "secret-id").stat().st_mode & 0o777 == 0o600
    again = run(tmp_path / "mine")
    assert (tmp_path / "mine" / "secret-id").read_text().strip() == secret
    for code, out, report in (first, again):
        assert code == 0, out.decode()
        assert report["heartbeat_errors"] == 0 and report["heartbeats"] >= 3, report
    code, out, _ = run(tmp_path / "other")
    assert code != 0 and b"403" in out, out.decode()
    assert secret not in c.logs()


def test_a_simulator_started_before_the_api_registers_once_it_answers(
    cluster: Cluster, tmp_path: Path
) -> None:
    """As the agent does, the simulator tries a registration again while the API cannot be
    reached (a connection refused or cut): its nodes register once the API is back."""
    c = cluster
    c.kill("api")
    sim = _sim(c, tmp_path / "sim.json", 4, "--duration", "60")
    try:
        time.sleep(2.5)
        assert sim.poll() is None
        wait_for_port(c.port, 60, proc=c.spawn("api"))
        c.wait(lambda: len([n for n in c.get("/v1/nodes") if n["Status"] == "ready"]) == 4, timeout=30)
        assert sim.poll() is None
    finally:
        sim.send_signal(signal.SIGINT)
        out, _ = sim.communicate(timeout=30)
    assert b"will retry" in out, out.decode()
