"""`drover sim` against the whole control plane: its nodes register, heartbeat in batches and
stay ready, and run their allocs as the mock driver would."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .cluster import Cluster

ENV = {"DROVER_HEARTBEAT_MIN_TTL": "3", "DROVER_HEARTBEAT_GRACE": "2"}


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, env=ENV).start()
    yield c
    c.stop()


def test_simulated_nodes_heartbeat_and_run_mock_allocs(cluster: Cluster, tmp_path: Path) -> None:
    c = cluster
    stats = tmp_path / "sim.json"
    sim = subprocess.Popen(
        [sys.executable, "-m", "drover.client.sim", "--api", str(c.http.base_url), "--nodes", "60",
         "--datacenters", "2", "--racks", "6", "--drivers", "mock,docker", "--stats", str(stats)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=c.env(),
    )  # fmt: skip
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
