"""The heartbeater (Nomad's nodeHeartbeater): hears client heartbeats on core NATS, keeps every
node's deadline (drover.control.leader.heartbeat) and, when a node misses its TTL and grace,
writes it down - or disconnected, when it runs allocs that tolerate it - with node-update evals.
A disconnected node's deadline is set again each time it passes, until the node goes down.
Heartbeats are never written to the log; status changes are."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

from drover.control.leader.heartbeat import ALIVE, WATCHED, HeartbeatTracker, missed_heartbeats
from drover.model.durations import SECOND
from drover.model.events import Event, NodeDeregistered, NodeRegistered, NodeStatusUpdated
from drover.runtime.leader import Leader
from drover.runtime.replica import Replica
from drover.runtime.settings import Settings
from drover.runtime.store import NewEvent

log = logging.getLogger("drover.leader")


class Heartbeater:
    """Every live node's heartbeat deadline, kept from heartbeats and the replica's node events."""

    def __init__(self, settings: Settings, replica: Replica) -> None:
        self.replica = replica
        self.tracker = HeartbeatTracker()
        self.grace = int(settings.heartbeat_grace * SECOND)
        # The longest TTL the API hands out in a cluster this size (TTL plus its stagger).
        self.min_ttl = int(settings.heartbeat_min_ttl * SECOND)
        self.failover_ttl = int(settings.failover_heartbeat_ttl * SECOND)
        self.per_second = settings.heartbeat_max_per_second
        self.wake = asyncio.Event()

    def longest_ttl(self) -> int:
        return 2 * max(self.min_ttl, int(len(self.replica.state.nodes) / self.per_second * SECOND))

    def start(self, now: int) -> None:
        """Just became the leader: every live (or disconnected) node gets the failover TTL."""
        alive = [n.id for n in self.replica.state.all_nodes() if n.status in WATCHED]
        self.tracker.failover(alive, now, self.failover_ttl)
        log.info("watching %d nodes (failover TTL %.0f s)", len(alive), self.failover_ttl / SECOND)

    def on_event(self, position: int, event: Event, meta: dict[str, Any]) -> None:
        """Registration, or a node coming back, starts the node's clock; so does a disconnect
        (to see when it goes down); a node that left or went down has none."""
        now = time.time_ns()
        if isinstance(event, NodeRegistered):
            if event.node.status in ALIVE:
                self.tracker.beat(event.node.id, now, self.longest_ttl(), self.grace)
        elif isinstance(event, NodeStatusUpdated):
            if event.status in WATCHED:
                if event.node_id not in self.tracker.deadline:
                    self.tracker.beat(event.node_id, now, self.longest_ttl(), self.grace)
            else:
                self.tracker.forget(event.node_id)
        elif isinstance(event, NodeDeregistered):
            self.tracker.forget(event.node_id)
        self.wake.set()

    def on_heartbeat(self, data: bytes) -> None:
        """A heartbeat message: {"NodeIDs": [...], "TTLs": [ns, ...]} (drover.runtime.bus)."""
        body = json.loads(data)
        now = time.time_ns()
        for node_id, ttl in zip(body["NodeIDs"], body["TTLs"], strict=True):
            self.tracker.beat(node_id, now, int(ttl), self.grace)
        self.wake.set()

    def missed(self, node_ids: list[str], now: int) -> list[Event]:
        """The events for nodes that missed their heartbeat: status and node-update evals. A
        disconnected node that stays so is watched for another TTL."""
        events = missed_heartbeats(self.replica.state, node_ids, now)
        changed = set()
        for e in events:
            if isinstance(e, NodeStatusUpdated):
                changed.add(e.node_id)
                log.info("node %s missed its heartbeat: %s", e.node_id, e.status)
        for node_id in node_ids:
            node = self.replica.state.node(node_id)
            if node_id not in changed and node is not None and node.status in WATCHED:
                self.tracker.beat(node_id, now, self.longest_ttl(), self.grace)
        return events


async def watch_heartbeats(heartbeater: Heartbeater, leader: Leader) -> None:
    """Write down the nodes that miss their heartbeat, as their deadlines pass, until
    `leader.stop` (set when fenced, too)."""
    pending: list[str] = []
    while not leader.stop.is_set():
        heartbeater.wake.clear()  # before looking: a wake-up during the append below is kept
        now = time.time_ns()
        pending.extend(heartbeater.tracker.expired(now))
        if pending:
            events = heartbeater.missed(pending, now)
            if events:
                items = [NewEvent(e) for e in events]
                if await leader.try_append(items, "could not record missed heartbeats") is None:
                    if not leader.stop.is_set():  # Postgres away: keep the missed nodes, retry
                        await asyncio.sleep(0.5)
                    continue
            pending = []
        nxt = heartbeater.tracker.next_deadline()
        timeout = 1.0 if nxt is None else max(0.01, min(1.0, (nxt - time.time_ns()) / SECOND))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(heartbeater.wake.wait(), timeout)
