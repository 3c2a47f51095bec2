"""The scheduler configuration honoured by a running cluster (API, broker, workers, planner as
processes; stand-in clients for the nodes): spread lands a count-10 job one per node, binpack
puts jobs on as few nodes as fit and a pool's own algorithm overrides the cluster's, and a
paused eval broker holds evals until it is unpaused. Then python-nomad's agent, operator,
regions and status calls, and the `drover operator scheduler`, `drover node pool` and
`drover server` verbs."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nomad  # type: ignore[import-untyped]
import pytest
from nomad.api import exceptions as nomad_errors  # type: ignore[import-untyped]

from .cluster import Cluster, job_json, node_json
from .standin import StandInClients
from .test_cli_verbs import drover, ok

CONFIG = "/v1/operator/scheduler/configuration"
# An affinity every node meets changes no ranking, but has every node scored (Nomad's node
# limit applies to jobs with affinities): binpack's pick is then the fullest node that fits,
# not the best of a window of them.
EVERY_NODE = [{"LTarget": "${node.datacenter}", "RTarget": "dc1", "Operand": "=", "Weight": 50}]


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path).start()
    yield c
    c.stop()


def _nodes(c: Cluster, names: list[str], pool: str = "") -> StandInClients:
    clients = StandInClients(str(c.http.base_url), [])
    for name in names:
        body = node_json(name)
        if pool:
            body["NodePool"] = pool
        r = clients.http.put("/v1/drover/node/register", json={"Node": body})
        r.raise_for_status()
        clients.node_ids.append(name)
    return clients


def _job(job_id: str, count: int, *, pool: str = "", affinities: list[dict[str, Any]] | None = None) -> Any:
    # A quarter of a node each (4000 MHz, 8192 MB): four fill one.
    body = job_json(job_id, count, cpu=1000, mem=2048, rolling=False)
    if pool:
        body["Job"]["NodePool"] = pool
    if affinities:
        body["Job"]["Affinities"] = affinities
    return body


def _placed(c: Cluster, prefix: str) -> list[dict[str, Any]]:
    return [
        a
        for a in c.get("/v1/allocations", prefix="")
        if a["JobID"].startswith(prefix) and a["DesiredStatus"] == "run"
    ]


def _per_node(allocs: list[dict[str, Any]]) -> list[int]:
    return sorted(Counter(a["NodeID"] for a in allocs).values(), reverse=True)


def test_spread_lands_a_count_10_job_one_per_node(cluster: Cluster) -> None:
    clients = _nodes(cluster, [f"node-{i:02d}" for i in range(10)])
    try:
        assert cluster.put(CONFIG, {"SchedulerAlgorithm": "spread"})["Updated"] is True
        cluster.put("/v1/jobs", _job("web", 10))
        allocs = cluster.wait(lambda: (a := _placed(cluster, "web")) and len(a) == 10 and a, timeout=30)
        assert _per_node(allocs) == [1] * 10
    finally:
        clients.close()


def test_binpack_fills_as_few_nodes_as_fit_and_a_pool_spreads_its_own(cluster: Cluster) -> None:
    """Ten jobs of a quarter node each: binpack (the cluster's) puts them on three nodes;
    the same ten in a pool whose SchedulerConfiguration says spread, one per node."""
    wide_pool = {"Name": "wide", "SchedulerConfiguration": {"SchedulerAlgorithm": "spread"}}
    assert cluster.http.put("/v1/node/pool/wide", json=wide_pool).status_code == 200
    packed = _nodes(cluster, [f"pack-{i:02d}" for i in range(10)])
    wide = _nodes(cluster, [f"wide-{i:02d}" for i in range(10)], pool="wide")
    try:
        for i in range(10):
            # One at a time: each placed before the next is registered.
            cluster.put("/v1/jobs", _job(f"packed-{i}", 1, affinities=EVERY_NODE))
            cluster.wait(lambda i=i: len(_placed(cluster, "packed-")) == i + 1, timeout=30)
            cluster.put("/v1/jobs", _job(f"wide-{i}", 1, pool="wide", affinities=EVERY_NODE))
            cluster.wait(lambda i=i: len(_placed(cluster, "wide-")) == i + 1, timeout=30)
        packed_allocs, wide_allocs = _placed(cluster, "packed-"), _placed(cluster, "wide-")
        assert _per_node(packed_allocs) == [4, 4, 2]
        assert {a["NodeID"] for a in packed_allocs} <= set(packed.node_ids)
        assert _per_node(wide_allocs) == [1] * 10
        assert {a["NodeID"] for a in wide_allocs} == set(wide.node_ids)
    finally:
        packed.close()
        wide.close()


def test_a_paused_broker_holds_evals_until_unpaused(cluster: Cluster) -> None:
    clients = _nodes(cluster, ["node-1", "node-2"])
    try:
        cluster.put(CONFIG, {"PauseEvalBroker": True, "PreemptionConfig": {"SystemSchedulerEnabled": True}})
        eval_id = cluster.put("/v1/jobs", _job("held", 2))["EvalID"]
        # The broker hands nothing out: the eval stays pending and nothing is placed.
        time.sleep(3)
        assert cluster.get(f"/v1/evaluation/{eval_id}")["Status"] == "pending"
        assert _placed(cluster, "held") == []
        cluster.put(CONFIG, {"PauseEvalBroker": False, "PreemptionConfig": {"SystemSchedulerEnabled": True}})
        cluster.wait(lambda: cluster.get(f"/v1/evaluation/{eval_id}")["Status"] == "complete", timeout=30)
        assert len(_placed(cluster, "held")) == 2
    finally:
        clients.close()


def test_python_nomad_s_agent_operator_regions_and_status_calls(cluster: Cluster) -> None:
    n = nomad.Nomad(address=f"http://127.0.0.1:{cluster.port}", timeout=30)
    me = n.agent.get_agent()
    assert me["config"]["Region"] == "global" and me["member"]["Status"] == "alive"
    # Earlier tests' servers (in the same NATS) have left; this one is the one alive.
    members = cluster.wait(lambda: [m for m in n.agent.get_members()["Members"] if m["Status"] == "alive"])
    assert [m["Tags"]["id"] for m in members] == [me["member"]["Tags"]["id"]]
    leader = n.status.leader.get_leader()
    assert leader == f"127.0.0.1:{cluster.port}" and leader in n.status.leader
    assert n.status.peers.get_peers() == [leader] and len(n.status.peers) == 1 and leader in n.status.peers
    assert n.regions.get_regions() == ["global"] and "global" in n.regions and len(n.regions) == 1
    raft = n.operator.get_configuration()
    assert [(s["Address"], s["Leader"], s["Voter"]) for s in raft["Servers"]] == [(leader, True, True)]
    # A live server is not removed; an unknown one is not found.
    with pytest.raises(nomad_errors.BaseNomadException):
        n.operator.delete_peer(leader)
    with pytest.raises(nomad_errors.URLNotFoundNomadException):
        n.operator.delete_peer("10.0.0.1:4647")
    # A server-only agent has no client's server list (Nomad answers 501).
    with pytest.raises(nomad_errors.BaseNomadException):
        n.agent.get_servers()


def test_the_operator_node_pool_and_server_verbs(cluster: Cluster, tmp_path: Path) -> None:
    out = ok(cluster, "operator", "scheduler", "get-config")
    assert (
        "Scheduler Algorithm               = binpack" in out
        and "Preemption System Scheduler       = true" in out
    )
    assert "Scheduler configuration updated!" in ok(
        cluster, "operator", "scheduler", "set-config", "-scheduler-algorithm", "spread",
        "-preempt-service-scheduler", "true", "-memory-oversubscription=true", "-node-scoring", "limit",
    )  # fmt: skip
    config = cluster.get(CONFIG)["SchedulerConfig"]
    assert config["SchedulerAlgorithm"] == "spread" and config["MemoryOversubscriptionEnabled"] is True
    assert config["NodeScoring"] == "limit"
    assert "Node Scoring                      = limit" in ok(cluster, "operator", "scheduler", "get-config")
    refused = drover(cluster, "operator", "scheduler", "set-config", "-node-scoring", "most")
    assert refused.returncode == 1 and "NodeScoring" in refused.stderr
    assert cluster.get(CONFIG)["SchedulerConfig"]["NodeScoring"] == "limit"
    # Only the flags given changed: the system scheduler still preempts.
    assert config["PreemptionConfig"] == {
        "SystemSchedulerEnabled": True, "SysBatchSchedulerEnabled": False,
        "BatchSchedulerEnabled": False, "ServiceSchedulerEnabled": True,
    }  # fmt: skip
    stale = drover(
        cluster, "operator", "scheduler", "set-config", "-check-index", "999999", "-pause-eval-broker", "true"
    )
    assert stale.returncode == 1 and "does not match current state" in stale.stderr
    assert '"SchedulerAlgorithm": "spread"' in ok(cluster, "operator", "scheduler", "get-config", "-json")

    spec = tmp_path / "gpu.nomad.hcl"
    spec.write_text(
        'node_pool "gpu" {\n  description = "GPU nodes"\n  meta { team = "ml" }\n'
        '  scheduler_config { scheduler_algorithm = "binpack" }\n}\n'
    )
    assert 'Successfully applied node pool "gpu"!' in ok(cluster, "node", "pool", "apply", str(spec))
    listing = ok(cluster, "node", "pool", "list")
    assert listing.splitlines()[0].split() == ["Name", "Description"] and "gpu      GPU nodes" in listing
    info = ok(cluster, "node", "pool", "info", "gp")
    assert "Description       = GPU nodes" in info and "Node Identity TTL = 24h0m0s" in info
    assert "team = ml" in info and "Scheduler Algorithm = binpack" in info
    clients = _nodes(cluster, ["g-1"], pool="gpu")
    try:
        cluster.put("/v1/jobs", _job("train", 1, pool="gpu"))
        assert "g-1" in ok(cluster, "node", "pool", "nodes", "gpu")
        assert "train" in ok(cluster, "node", "pool", "jobs", "gpu")
        refused = drover(cluster, "node", "pool", "delete", "gpu")
        assert refused.returncode == 1 and 'node pool "gpu" has nodes in regions: [global]' in refused.stderr
        builtin = drover(cluster, "node", "pool", "delete", "default")
        assert builtin.returncode == 1 and 'deleting node pool "default" is not allowed' in builtin.stderr
    finally:
        clients.close()
    lines = ok(cluster, "server", "members").splitlines()
    assert lines[0].split() == [
        "Name", "Address", "Port", "Status", "Leader", "Raft", "Version", "Build", "Datacenter", "Region",
    ]  # fmt: skip
    alive = [line.split() for line in lines[1:] if line.split()[3] == "alive"]
    assert [row[1:6] + row[7:] for row in alive] == [
        ["127.0.0.1", str(cluster.port), "alive", "true", "3", "dc1", "global"]
    ]
