"""Node commands: register, heartbeats that bring a node back, status, eligibility, drain and
purge.
A node that becomes ready (or leaves ready) gets its jobs node-update evals (as Nomad's
node endpoint creates them): one per
job with a live alloc on it, one per system job whose datacenters and pool take it."""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable

from drover.control.change import Change
from drover.control.commands.reads import ClusterReads
from drover.control.errors import Forbidden, Invalid, NotFound
from drover.control.leader.heartbeat import node_update_evals
from drover.model import Evaluation, Node
from drover.model.events import (
    NodeDeregistered,
    NodeDrainUpdated,
    NodeEligibilityUpdated,
    NodeRegistered,
    NodeStatusUpdated,
)
from drover.model.node import NODE_ELIGIBLE, NODE_INELIGIBLE, NODE_STATUS_READY, DrainSpec, DrainStrategy
from drover.model.nodepool import NODE_POOL_ALL, NODE_POOL_DEFAULT, name_problems

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def update_evals(reads: ClusterReads, node: Node, now: int) -> list[Evaluation]:
    """The node-update evals for `node` as it is now."""
    return node_update_evals(node, reads.live_jobs_on(node.id), reads.system_jobs(), now)


def register(
    reads: ClusterReads, node: Node, secret_id: object, hash_secret: Callable[[str], str], now: int
) -> Change:
    """Register (or re-register) a node with its SecretID (a UUID, as Nomad's client makes
    it), of which the log keeps only `hash_secret`'s hash; a ready one gets its jobs
    evaluated. As Nomad's Node.Register, a node registered before keeps its secret: a
    registration with another is refused (a node registered without one takes this one). Its
    pool need not exist: the first node registering into one creates it
    (drover.model.events.nodes)."""
    if not node.node_pool:
        node = node.model_copy(update={"node_pool": NODE_POOL_DEFAULT})
    problems = [f"invalid node pool: {p}" for p in name_problems(node.node_pool)]
    if node.node_pool == NODE_POOL_ALL:
        problems.append(f'node is not allowed to register in node pool "{NODE_POOL_ALL}"')
    if not node.id:
        problems.append("Node.ID is required")
    if secret_id == "" or secret_id is None:
        problems.append("Node.SecretID is required")
    elif not isinstance(secret_id, str) or not _UUID.fullmatch(secret_id):
        problems.append("Node.SecretID must be a UUID")
    if not node.datacenter:
        problems.append("Node.Datacenter is required")
    if min(node.capacity()) < 0:
        problems.append("Node reserves more resources than it has")
    if problems:
        raise Invalid.of(problems, "Node is invalid:")
    assert isinstance(secret_id, str)
    secret_hash = hash_secret(secret_id)
    known = reads.node_secret_hash(node.id)
    if known and not hmac.compare_digest(known, secret_hash):
        raise Forbidden()
    evals = update_evals(reads, node, now) if node.ready() else []
    return Change.of([NodeRegistered(node=node, secret_hash=secret_hash)], evals)


def heartbeat(reads: ClusterReads, node_ids: list[str], now: int) -> Change:
    """Heartbeats of `node_ids`: each one not ready (down, disconnected) comes back ready, with
    its evals. Heartbeats themselves are not events."""
    statuses = reads.node_statuses(node_ids)
    unknown = [n for n in node_ids if n not in statuses]
    if unknown:
        raise NotFound(f"unknown nodes: {', '.join(unknown)}")
    returning = [n for n, status in statuses.items() if status != NODE_STATUS_READY]
    events, evals = [], []
    for node in (reads.nodes_by_id(returning) if returning else {}).values():
        if node.status != NODE_STATUS_READY:
            events.append(NodeStatusUpdated(node_id=node.id, status=NODE_STATUS_READY, at=now))
            evals.extend(update_evals(reads, node.model_copy(update={"status": NODE_STATUS_READY}), now))
    return Change.of(events, evals)


def _node(reads: ClusterReads, node_id: str) -> Node:
    node = reads.node(node_id)
    if node is None:
        raise NotFound("node not found")
    return node


def set_status(reads: ClusterReads, node_id: str, status: str, now: int) -> Change:
    """The node's client says its status; a change evaluates its jobs."""
    node = _node(reads, node_id)
    evals = []
    if status != node.status:
        evals = update_evals(reads, node.model_copy(update={"status": status}), now)
    return Change.of([NodeStatusUpdated(node_id=node_id, status=status, at=now)], evals)


def set_eligibility(reads: ClusterReads, node_id: str, eligibility: str) -> Change:
    """Mark the node eligible or ineligible for new placements."""
    if eligibility not in (NODE_ELIGIBLE, NODE_INELIGIBLE):
        raise Invalid('Eligibility must be "eligible" or "ineligible"')
    _node(reads, node_id)
    return Change.of([NodeEligibilityUpdated(node_id=node_id, eligibility=eligibility)])


def drain(reads: ClusterReads, node_id: str, spec: DrainSpec | None, mark_eligible: bool, now: int) -> Change:
    """Start a drain (`spec`; a negative deadline forces it now, 0 means none) or cancel it
    (None; `mark_eligible` makes the node eligible again). The node drainer moves the allocs."""
    _node(reads, node_id)
    if spec is None:
        eligibility = NODE_ELIGIBLE if mark_eligible else ""
        return Change.of([NodeDrainUpdated(node_id=node_id, drain_strategy=None, eligibility=eligibility)])
    deadline = spec.deadline
    strategy = DrainStrategy(
        drain_spec=spec,
        force_deadline=now if deadline < 0 else (now + deadline if deadline > 0 else 0),
        started_at=now,
    )
    return Change.of(
        [NodeDrainUpdated(node_id=node_id, drain_strategy=strategy, eligibility=NODE_INELIGIBLE)]
    )


def purge(reads: ClusterReads, node_id: str, now: int) -> Change:
    """Deregister the node (Nomad's node purge): it leaves the cluster, and its jobs get
    node-update evals, so the scheduler finds their allocs on a node that is gone (lost) and
    replaces them. An agent still running there registers again at its next heartbeat."""
    node = _node(reads, node_id)
    return Change.of([NodeDeregistered(node_id=node_id)], update_evals(reads, node, now))
