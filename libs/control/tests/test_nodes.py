"""Node commands: registration, heartbeats bringing nodes back, status, eligibility, drain and
purge, with the node-update evals a status change or a purge calls for."""

from __future__ import annotations

import hashlib

import pytest

from drover.control.commands import nodes
from drover.control.errors import Forbidden, Invalid, NotFound
from drover.model import Job, Node
from drover.model.events import (
    EvalsUpserted,
    NodeDeregistered,
    NodeDrainUpdated,
    NodeEligibilityUpdated,
    NodeRegistered,
    NodeStatusUpdated,
)
from drover.model.node import DrainSpec, NodeReservedResources
from drover.model.reducer import apply

from .conftest import NOW, Cluster, alloc, job, node

SECRET = "5e2b7c1a-9d4f-4e3b-8a6c-1f0e2d3c4b5a"


def hashed(secret: str) -> str:
    """A stand-in for the API's keyed hash."""
    return hashlib.sha256(b"key:" + secret.encode()).hexdigest()


@pytest.mark.parametrize(
    ("given", "problems"),
    [
        (Node(datacenter="dc1"), ["Node.ID is required"]),
        (Node(id="n1", datacenter=""), ["Node.Datacenter is required"]),
        (Node(datacenter=""), ["Node.ID is required", "Node.Datacenter is required"]),
        (
            node("n1", reserved_resources=NodeReservedResources.model_validate({"Cpu": {"CpuShares": 5000}})),
            ["Node reserves more resources than it has"],
        ),
    ],
)
def test_register_refuses_with_every_problem(cluster: Cluster, given: Node, problems: list[str]) -> None:
    with pytest.raises(Invalid) as e:
        nodes.register(cluster.reads, given, SECRET, hashed, NOW)
    assert e.value.message.splitlines() == ["Node is invalid:", *problems]


@pytest.mark.parametrize(
    ("secret", "problem"),
    [
        ("", "Node.SecretID is required"),
        (None, "Node.SecretID is required"),
        ("s3cr3t", "Node.SecretID must be a UUID"),
        (42, "Node.SecretID must be a UUID"),
        (SECRET + "x", "Node.SecretID must be a UUID"),
    ],
)
def test_register_wants_a_uuid_secret(cluster: Cluster, secret: object, problem: str) -> None:
    with pytest.raises(Invalid) as e:
        nodes.register(cluster.reads, Node(datacenter=""), secret, hashed, NOW)
    assert e.value.message.splitlines() == [
        "Node is invalid:", "Node.ID is required", problem, "Node.Datacenter is required",
    ]  # fmt: skip


OTHER = "0b9c1f4e-3a6d-4f7b-8e2a-5c1d9e8f7a60"


@pytest.mark.parametrize(
    ("known", "given", "allowed"),
    [
        (None, SECRET, True),  # a new node
        (hashed(SECRET), SECRET, True),  # registered again with its secret
        (hashed(SECRET), OTHER, False),  # another secret: refused ("node secret ID does not match")
        ("", OTHER, True),  # registered before nodes had secrets: it takes this one
    ],
)
def test_register_again_only_with_the_nodes_secret(
    cluster: Cluster, known: str | None, given: str, allowed: bool
) -> None:
    if known is not None:
        apply(cluster.state, 1, NodeRegistered(node=node("n1"), secret_hash=known))
    if not allowed:
        with pytest.raises(Forbidden, match="Permission denied"):
            nodes.register(cluster.reads, node("n1"), given, hashed, NOW)
        assert cluster.reads.node_secret_hash("n1") == known
        return
    change = nodes.register(cluster.reads, node("n1"), given, hashed, NOW)
    (registered,) = (e.event for e in change.events)
    assert isinstance(registered, NodeRegistered) and registered.secret_hash == hashed(given)
    apply(cluster.state, 2, registered)
    assert cluster.reads.node_secret_hash("n1") == hashed(given)
    # Only the hash is kept, beside the node: its document and API form carry neither.
    assert given not in registered.model_dump_json()
    shown = cluster.state.nodes["n1"].model_dump_json(by_alias=True)
    assert "Secret" not in shown and hashed(given) not in shown


def _system(job_id: str = "sys", **kw: object) -> Job:
    return job(job_id, type="system", **kw)


@pytest.mark.parametrize(
    ("status", "jobs", "evaluated"),
    [
        ("ready", [], []),
        ("ready", [_system()], ["sys"]),
        ("ready", [_system(stop=True)], []),
        ("ready", [_system(datacenters=["dc2"])], []),  # its datacenters do not take the node
        ("initializing", [_system()], []),  # only a ready node is evaluated
    ],
)
def test_register_evaluates_the_system_jobs_that_take_a_ready_node(
    cluster: Cluster, status: str, jobs: list[Job], evaluated: list[str]
) -> None:
    cluster.add(*jobs)
    change = nodes.register(cluster.reads, node("n1", status=status), SECRET, hashed, NOW)
    assert isinstance(change.events[0].event, NodeRegistered)
    assert [e.job_id for e in change.evals] == evaluated
    assert all(e.triggered_by == "node-update" and e.node_id == "n1" for e in change.evals)


def test_heartbeats_bring_nodes_back_and_evaluate_their_jobs(cluster: Cluster) -> None:
    web = job("web")
    cluster.add(
        node("up"), node("down", status="down"), web, alloc("a1", web, "down", client_status="running")
    )
    change = nodes.heartbeat(cluster.reads, ["up", "down"], NOW)
    (back, evals) = (e.event for e in change.events)
    assert isinstance(back, NodeStatusUpdated) and (back.node_id, back.status, back.at) == (
        "down",
        "ready",
        NOW,
    )
    assert isinstance(evals, EvalsUpserted) and [e.job_id for e in change.evals] == ["web"]
    assert nodes.heartbeat(cluster.reads, ["up"], NOW).events == []  # a ready node's beat writes nothing
    with pytest.raises(NotFound, match="unknown nodes: ghost"):
        nodes.heartbeat(cluster.reads, ["up", "ghost"], NOW)


@pytest.mark.parametrize(("status", "evaluated"), [("ready", []), ("down", ["web"])])
def test_a_status_change_evaluates_the_jobs_on_the_node(
    cluster: Cluster, status: str, evaluated: list[str]
) -> None:
    web = job("web")
    cluster.add(
        node("n1"),
        web,
        alloc("a1", web, client_status="running"),
        alloc("a2", job("gone"), desired_status="stop"),
    )
    change = nodes.set_status(cluster.reads, "n1", status, NOW)
    assert isinstance(change.events[0].event, NodeStatusUpdated)
    assert [e.job_id for e in change.evals] == evaluated


def test_eligibility(cluster: Cluster) -> None:
    cluster.add(node("n1"))
    event = nodes.set_eligibility(cluster.reads, "n1", "ineligible").events[0].event
    assert isinstance(event, NodeEligibilityUpdated) and event.eligibility == "ineligible"
    with pytest.raises(Invalid):
        nodes.set_eligibility(cluster.reads, "n1", "maybe")
    with pytest.raises(NotFound):
        nodes.set_eligibility(cluster.reads, "ghost", "eligible")


@pytest.mark.parametrize(
    ("deadline", "force_deadline"),
    [(0, 0), (-1, NOW), (60_000_000_000, NOW + 60_000_000_000)],
)
def test_a_drain_s_force_deadline(cluster: Cluster, deadline: int, force_deadline: int) -> None:
    cluster.add(node("n1"))
    event = nodes.drain(cluster.reads, "n1", DrainSpec(deadline=deadline), False, NOW).events[0].event
    assert isinstance(event, NodeDrainUpdated) and event.drain_strategy is not None
    assert event.drain_strategy.force_deadline == force_deadline and event.drain_strategy.started_at == NOW
    assert event.eligibility == "ineligible"


@pytest.mark.parametrize(("mark_eligible", "eligibility"), [(False, ""), (True, "eligible")])
def test_cancelling_a_drain(cluster: Cluster, mark_eligible: bool, eligibility: str) -> None:
    cluster.add(node("n1"))
    event = nodes.drain(cluster.reads, "n1", None, mark_eligible, NOW).events[0].event
    assert isinstance(event, NodeDrainUpdated)
    assert event.drain_strategy is None and event.eligibility == eligibility
    with pytest.raises(NotFound):
        nodes.drain(cluster.reads, "ghost", None, False, NOW)


def test_purge_deregisters_the_node_and_evaluates_its_jobs(cluster: Cluster) -> None:
    web, batch, done = job("web"), job("batch", type="batch"), job("done")
    cluster.add(
        node("n1"),
        node("n2"),
        web,
        batch,
        done,
        _system(),
        _system("elsewhere", datacenters=["dc2"]),
        alloc("a1", web, client_status="running"),
        alloc("a2", web, client_status="running", name="web.g[1]"),  # one eval per job
        alloc("a3", batch, client_status="pending"),
        alloc("a4", done, client_status="complete"),  # finished: nothing to replace
        alloc("a5", web, "n2", client_status="running"),
    )
    change = nodes.purge(cluster.reads, "n1", NOW)
    gone, evals = (e.event for e in change.events)
    assert isinstance(gone, NodeDeregistered) and gone.node_id == "n1"
    assert isinstance(evals, EvalsUpserted) and evals.evals == change.evals
    assert sorted(e.job_id for e in change.evals) == ["batch", "sys", "web"]
    assert all(
        (e.triggered_by, e.node_id, e.status) == ("node-update", "n1", "pending") for e in change.evals
    )
    with pytest.raises(NotFound):
        nodes.purge(cluster.reads, "ghost", NOW)


def test_purge_of_an_empty_node_writes_no_eval(cluster: Cluster) -> None:
    cluster.add(node("n1"))
    change = nodes.purge(cluster.reads, "n1", NOW)
    assert [type(e.event) for e in change.events] == [NodeDeregistered] and change.evals == []
