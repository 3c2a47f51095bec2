"""Heartbeat rules (Nomad's heartbeater): TTL scaling, grace, failover TTL, down vs disconnected,
the node-update evals of a status change, and the events of missed heartbeats."""

from __future__ import annotations

import random

import pytest

from drover.control.leader.heartbeat import (
    FAILOVER_HEARTBEAT_TTL,
    HEARTBEAT_GRACE,
    HEARTBEAT_MISSED,
    MIN_HEARTBEAT_TTL,
    HeartbeatTracker,
    heartbeat_ttl,
    missed_heartbeats,
    missed_status,
    node_update_evals,
)
from drover.model import Allocation, AllocState, Job, Node, TaskGroup
from drover.model.durations import SECOND as S
from drover.model.events import EvalsUpserted, NodeStatusUpdated
from drover.model.job import Disconnect, ParameterizedJobConfig
from drover.model.state import InMemoryState


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


NOW = 1_000 * S


def _unknown_since(t: int) -> dict[str, object]:
    return {
        "client_status": "unknown",
        "alloc_states": [AllocState(field="ClientStatus", value="unknown", time=t)],
    }


@pytest.mark.parametrize(
    ("allocs", "want"),
    [
        ([], "down"),
        ([_alloc("plain")], "down"),
        ([_alloc("plain"), _alloc("tolerant")], "disconnected"),
        ([_alloc("tolerant", desired_status="stop")], "down"),  # only live allocs count
        ([_alloc("tolerant", client_status="complete")], "down"),
        ([_alloc("unknown-job")], "down"),
        # Unknown for less than lost_after (60 s): it may still reconnect.
        ([_alloc("tolerant", **_unknown_since(NOW - 59 * S))], "disconnected"),
        # Past it: nothing left to reconnect, the node goes down.
        ([_alloc("tolerant", **_unknown_since(NOW - 60 * S))], "down"),
    ],
)
def test_missed_node_goes_down_or_disconnected(allocs: list[Allocation], want: str) -> None:
    jobs = {("default", "plain"): _job("plain"), ("default", "tolerant"): _job("tolerant", lost_after=60 * S)}
    assert missed_status(allocs, jobs, NOW) == want


def test_node_update_evals_one_per_job_and_matching_system_job() -> None:
    node = Node(id="n1", datacenter="dc1")
    live = [_job("web"), _job("api")]
    system = [
        _job("agent", type="system", datacenters=["dc1"]),
        _job("elsewhere", type="system", datacenters=["dc9"]),
        _job("stopped", type="system", stop=True),
        _job(
            "template", type="sysbatch", parameterized_job=ParameterizedJobConfig()
        ),  # only its children run
        _job("web"),  # already there
    ]
    evals = node_update_evals(node, live, system, now=5)
    assert sorted(e.job_id for e in evals) == ["agent", "api", "web"]
    assert {(e.triggered_by, e.node_id, e.status, e.create_time) for e in evals} == {
        ("node-update", "n1", "pending", 5)
    }
    assert len({e.id for e in evals}) == 3


def _cluster() -> InMemoryState:
    """n1 runs a plain job's alloc, n2 a tolerant one's (disconnect.lost_after), n3 is
    initializing in another datacenter, n4 is down, n5 ran a plain alloc that completed; a
    system job runs in dc1."""
    st = InMemoryState()
    for node in (
        Node(id="n1"),
        Node(id="n2"),
        Node(id="n3", status="initializing", datacenter="dc9"),
        Node(id="n4", status="down"),
        Node(id="n5"),
    ):
        st.upsert_node(node)
    for job in (
        _job("plain"),
        _job("tolerant", lost_after=60 * S),
        _job("agent", type="system", datacenters=["dc1"]),
        _job("retired", type="system", datacenters=["dc1", "dc9"], stop=True),
    ):
        st.upsert_job(job)
    st.upsert_alloc(Allocation(id="a1", job_id="plain", task_group="g", node_id="n1"))
    st.upsert_alloc(Allocation(id="a2", job_id="tolerant", task_group="g", node_id="n2"))
    st.upsert_alloc(
        Allocation(id="a5", job_id="plain", task_group="g", node_id="n5", client_status="complete")
    )
    return st


@pytest.mark.parametrize(
    ("missed", "statuses", "evals"),
    [
        ([], [], set()),
        (["gone"], [], set()),  # deregistered meanwhile
        (["n4"], [], set()),  # down already
        (["n1"], [("n1", "down")], {("plain", "n1"), ("agent", "n1")}),
        (["n2"], [("n2", "disconnected")], {("tolerant", "n2"), ("agent", "n2")}),
        (["n3"], [("n3", "down")], set()),  # initializing counts as alive; no job there
        (["n5"], [("n5", "down")], {("agent", "n5")}),  # a finished alloc's job is not evaluated
        (
            ["n1", "n4", "n2"],
            [("n1", "down"), ("n2", "disconnected")],
            {("plain", "n1"), ("agent", "n1"), ("tolerant", "n2"), ("agent", "n2")},
        ),
    ],
)
def test_missed_heartbeats_write_each_status_then_the_node_update_evals(
    missed: list[str], statuses: list[tuple[str, str]], evals: set[tuple[str, str]]
) -> None:
    events = missed_heartbeats(_cluster(), missed, now=7)
    updates = [e for e in events if isinstance(e, NodeStatusUpdated)]
    assert [(e.node_id, e.status) for e in updates] == statuses
    assert {(e.status_description, e.at) for e in updates} <= {(HEARTBEAT_MISSED, 7)}
    # One batch of evals, after the statuses (none without evals).
    assert events[: len(updates)] == updates
    written = [e for event in events[len(updates) :] for e in event.evals if isinstance(event, EvalsUpserted)]
    assert len(events) == len(updates) + (1 if evals else 0)
    assert {(e.job_id, e.node_id) for e in written} == evals
    assert {(e.triggered_by, e.create_time) for e in written} <= {("node-update", 7)}


@pytest.mark.parametrize(("unknown_for", "status"), [(30 * S, None), (61 * S, "down")])
def test_a_disconnected_node_goes_down_once_none_of_its_allocs_can_reconnect(
    unknown_for: int, status: str | None
) -> None:
    st = _cluster()
    st.upsert_node(Node(id="n2", status="disconnected"))
    a2 = st.allocs["a2"]
    st.upsert_alloc(a2.model_copy(update=_unknown_since(NOW - unknown_for)))
    events = missed_heartbeats(st, ["n2"], now=NOW)
    updates = [(e.node_id, e.status) for e in events if isinstance(e, NodeStatusUpdated)]
    assert updates == ([("n2", status)] if status else [])
    # Going down from disconnected evaluates its jobs again (Nomad: disconnected to other).
    written = {e.job_id for event in events if isinstance(event, EvalsUpserted) for e in event.evals}
    assert written == ({"tolerant", "agent"} if status else set())
