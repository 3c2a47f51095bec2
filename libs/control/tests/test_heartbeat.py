"""Heartbeat rules (spec page: "Nodes"): TTL scaling, grace, failover TTL, down vs disconnected,
and the node-update evals of a status change."""

from __future__ import annotations

import random

import pytest

from drover.control.heartbeat import (
    FAILOVER_HEARTBEAT_TTL,
    HEARTBEAT_GRACE,
    MIN_HEARTBEAT_TTL,
    HeartbeatTracker,
    heartbeat_ttl,
    missed_status,
    node_update_evals,
)
from drover.model import Allocation, Job, Node, TaskGroup
from drover.model.job import Disconnect

S = 1_000_000_000


@pytest.mark.parametrize(
    ("nodes", "base"),
    [(1, MIN_HEARTBEAT_TTL), (500, MIN_HEARTBEAT_TTL), (1000, 20 * S), (5000, 100 * S)],
)
def test_ttl_scales_with_the_cluster_with_a_stagger_of_up_to_the_same_again(nodes: int, base: int) -> None:
    rng = random.Random(7)
    ttls = [heartbeat_ttl(nodes, rng) for _ in range(200)]
    assert all(base <= t < 2 * base for t in ttls)
    assert max(ttls) - min(ttls) > base / 2  # staggered, not all alike


def test_missed_after_ttl_plus_grace_and_a_beat_pushes_the_deadline() -> None:
    hb = HeartbeatTracker()
    hb.beat("n1", 0, 10 * S)
    hb.beat("n2", 0, 10 * S)
    assert hb.expired(10 * S + HEARTBEAT_GRACE - 1) == []
    hb.beat("n2", 15 * S, 10 * S)
    assert hb.expired(10 * S + HEARTBEAT_GRACE) == ["n1"]
    assert hb.expired(10 * S + HEARTBEAT_GRACE) == []  # handed out once
    assert hb.next_deadline() == 15 * S + 10 * S + HEARTBEAT_GRACE
    assert hb.expired(35 * S) == ["n2"]
    assert hb.next_deadline() is None


def test_failover_gives_every_node_the_failover_ttl() -> None:
    hb = HeartbeatTracker()
    hb.failover(["a", "b"], 100 * S)
    assert hb.expired(100 * S + FAILOVER_HEARTBEAT_TTL - 1) == []
    hb.beat("a", 120 * S, 10 * S)  # a beat replaces the failover deadline
    assert hb.expired(150 * S) == ["a"]
    assert hb.expired(100 * S + FAILOVER_HEARTBEAT_TTL) == ["b"]


def test_forgotten_nodes_never_expire() -> None:
    hb = HeartbeatTracker()
    hb.beat("gone", 0, S)
    hb.forget("gone")
    assert hb.expired(100 * S) == []


def _job(job_id: str, lost_after: int = 0, **kw: object) -> Job:
    tg = TaskGroup(name="g", disconnect=Disconnect(lost_after=lost_after) if lost_after else None)
    return Job(id=job_id, task_groups=[tg], **kw)  # type: ignore[arg-type]


def _alloc(job_id: str, **kw: object) -> Allocation:
    return Allocation(id=f"{job_id}-a", job_id=job_id, task_group="g", node_id="n1", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("allocs", "want"),
    [
        ([], "down"),
        ([_alloc("plain")], "down"),
        ([_alloc("plain"), _alloc("tolerant")], "disconnected"),
        ([_alloc("tolerant", desired_status="stop")], "down"),  # only live allocs count
        ([_alloc("tolerant", client_status="complete")], "down"),
        ([_alloc("unknown-job")], "down"),
    ],
)
def test_missed_node_goes_down_or_disconnected(allocs: list[Allocation], want: str) -> None:
    jobs = {("default", "plain"): _job("plain"), ("default", "tolerant"): _job("tolerant", lost_after=60 * S)}
    assert missed_status(allocs, jobs) == want


def test_node_update_evals_one_per_job_and_matching_system_job() -> None:
    node = Node(id="n1", datacenter="dc1")
    live = [_job("web"), _job("api")]
    system = [
        _job("agent", type="system", datacenters=["dc1"]),
        _job("elsewhere", type="system", datacenters=["dc9"]),
        _job("stopped", type="system", stop=True),
        _job("web"),  # already there
    ]
    evals = node_update_evals(node, live, system, now=5)
    assert sorted(e.job_id for e in evals) == ["agent", "api", "web"]
    assert {(e.triggered_by, e.node_id, e.status, e.create_time) for e in evals} == {
        ("node-update", "n1", "pending", 5)
    }
    assert len({e.id for e in evals}) == 3
