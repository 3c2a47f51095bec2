"""Client heartbeats, as pure rules (time is passed in).

- A node's TTL scales with the cluster so the servers see at most MAX_HEARTBEATS_PER_SECOND:
  max(MIN_HEARTBEAT_TTL, nodes / 50 s), plus a random stagger of up to the same again so
  heartbeats spread out (Nomad's RateScaledInterval + RandomStagger).
- A node is missed once TTL + HEARTBEAT_GRACE pass without a heartbeat.
- After a failover (a new leader takes over) every node first gets FAILOVER_HEARTBEAT_TTL: the
  new leader cannot know when each node last beat.
- A missed node goes down ("Node heartbeat missed") - or disconnected when it runs an alloc
  whose group has disconnect.lost_after and has not been unknown that long: those allocs
  become unknown, and are lost only at expiry. A disconnected node keeps a deadline too: each
  time it passes, it goes down once none of its allocs can reconnect any more (Nomad's
  disconnectState).
- Heartbeats are not state changes and never reach the event log; status transitions do, with
  node-update evals (one per job with a live alloc on the node, one per system job whose
  datacenters and pool take it): `missed_heartbeats`.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterable

from drover.model.alloc import ALLOC_CLIENT_UNKNOWN, Allocation
from drover.model.durations import SECOND
from drover.model.evaluation import TRIGGER_NODE_UPDATE, Evaluation, job_eval
from drover.model.events import EvalsUpserted, Event, NodeStatusUpdated
from drover.model.job import Job
from drover.model.node import (
    NODE_STATUS_DISCONNECTED,
    NODE_STATUS_DOWN,
    NODE_STATUS_INIT,
    NODE_STATUS_READY,
    Node,
)
from drover.model.state import InMemoryState
from drover.scheduler.feasible import node_in_job_pool

MIN_HEARTBEAT_TTL = 10 * SECOND
MAX_HEARTBEATS_PER_SECOND = 50.0
HEARTBEAT_GRACE = 10 * SECOND
FAILOVER_HEARTBEAT_TTL = 300 * SECOND
HEARTBEAT_MISSED = "Node heartbeat missed"
# The node statuses a heartbeat is expected in.
ALIVE = (NODE_STATUS_READY, NODE_STATUS_INIT)
# The statuses a node has a heartbeat deadline in: alive, or disconnected until it goes down.
WATCHED = (*ALIVE, NODE_STATUS_DISCONNECTED)


def heartbeat_ttl(
    nodes: int,
    rng: random.Random,
    *,
    min_ttl: int = MIN_HEARTBEAT_TTL,
    per_second: float = MAX_HEARTBEATS_PER_SECOND,
) -> int:
    """The TTL to hand a node (ns) in a cluster of `nodes`."""
    base = max(min_ttl, int(nodes / per_second * SECOND))
    return base + int(rng.random() * base)


class HeartbeatTracker:
    """Deadlines by node; `expired` hands out the nodes whose deadline has passed, once."""

    def __init__(self) -> None:
        self.deadline: dict[str, int] = {}
        self._heap: list[tuple[int, str]] = []

    def beat(self, node_id: str, now: int, ttl: int, grace: int = HEARTBEAT_GRACE) -> None:
        self._set(node_id, now + ttl + grace)

    def failover(self, node_ids: Iterable[str], now: int, ttl: int = FAILOVER_HEARTBEAT_TTL) -> None:
        """Give every node `ttl` from `now`, unless it has a later deadline already."""
        for node_id in node_ids:
            if self.deadline.get(node_id, 0) < now + ttl:
                self._set(node_id, now + ttl)

    def forget(self, node_id: str) -> None:
        self.deadline.pop(node_id, None)

    def _set(self, node_id: str, deadline: int) -> None:
        self.deadline[node_id] = deadline
        heapq.heappush(self._heap, (deadline, node_id))

    def expired(self, now: int) -> list[str]:
        out: list[str] = []
        while self._heap and self._heap[0][0] <= now:
            deadline, node_id = heapq.heappop(self._heap)
            # Stale heap entries (the node beat since) are skipped.
            if self.deadline.get(node_id) == deadline:
                del self.deadline[node_id]
                out.append(node_id)
        return out

    def next_deadline(self) -> int | None:
        while self._heap and self.deadline.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None


def missed_status(allocs: Iterable[Allocation], job_of: dict[tuple[str, str], Job], now: int) -> str:
    """What a node that missed its heartbeat becomes: disconnected while a live alloc on it
    belongs to a group with disconnect.lost_after and has not been unknown that long yet;
    down otherwise."""
    for a in allocs:
        if a.terminal_status():
            continue
        job = job_of.get((a.namespace, a.job_id))
        tg = job.lookup_task_group(a.task_group) if job is not None else None
        lost_after = tg.lost_after() if tg is not None else 0
        if lost_after <= 0:
            continue
        since = a.last_unknown() if a.client_status == ALLOC_CLIENT_UNKNOWN else 0
        if not since or now < since + lost_after:
            return NODE_STATUS_DISCONNECTED
    return NODE_STATUS_DOWN


def node_update_evals(
    node: Node, jobs_with_live_allocs: Iterable[Job], system_jobs: Iterable[Job], now: int
) -> list[Evaluation]:
    """One node-update eval per job with a live alloc on the node, and one per system job whose
    datacenters and pool take the node."""
    jobs = {(j.namespace, j.id): j for j in jobs_with_live_allocs}
    for sj in system_jobs:
        # A periodic or parameterized system job is a template: its children run, not itself.
        if (
            (sj.namespace, sj.id) not in jobs
            and not sj.stop
            and not sj.launches_children()
            and node_in_job_pool(node, sj)
        ):
            jobs[(sj.namespace, sj.id)] = sj
    return [job_eval(j, TRIGGER_NODE_UPDATE, now, node_id=node.id) for j in jobs.values()]


def missed_heartbeats(state: InMemoryState, node_ids: Iterable[str], now: int) -> list[Event]:
    """The events for nodes that missed their heartbeat: each one's new status (`missed_status`)
    and then all their node-update evals (`node_update_evals`). Nodes gone, down already, or
    disconnected and staying so are skipped."""
    events: list[Event] = []
    evals = []
    system = [j for j in state.jobs.values() if j.is_system() and not j.stop]
    for node_id in node_ids:
        node = state.node(node_id)
        if node is None or node.status not in WATCHED:
            continue
        allocs = state.allocs_by_node(node_id)
        jobs: dict[tuple[str, str], Job] = {}
        for a in allocs:
            job = state.job(a.namespace, a.job_id)
            if job is not None:
                jobs[(a.namespace, a.job_id)] = job
        status = missed_status(allocs, jobs, now)
        if status == node.status:
            continue
        events.append(
            NodeStatusUpdated(node_id=node_id, status=status, status_description=HEARTBEAT_MISSED, at=now)
        )
        live = [
            jobs[(a.namespace, a.job_id)]
            for a in allocs
            if not a.terminal_status() and (a.namespace, a.job_id) in jobs
        ]
        evals.extend(node_update_evals(node.model_copy(update={"status": status}), live, system, now))
    if evals:
        events.append(EvalsUpserted(evals=evals))
    return events
