"""`drover-watcher`: the heartbeat watcher, node drainer and deployment watcher. One instance
is active (advisory lock, lease epoch that fences a deposed one's appends), the others stand by. The active one
hears heartbeats on core NATS, keeps every node's deadline (drover.control.heartbeat) and,
when a node misses its TTL and grace, writes it down - or disconnected, when it runs allocs
that tolerate it - with node-update evals. Heartbeats are never written to the log; status
changes are. It also drains nodes (drover.control.drainer): allocs marked to migrate in
batches of migrate.max_parallel, with node-drain evals, and the drain cleared when done. And it
watches deployments (drover.watcher.deployments).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from typing import Any

from nats.aio.msg import Msg

from drover.control.drainer import drain_step
from drover.control.heartbeat import (
    HEARTBEAT_MISSED,
    HeartbeatTracker,
    missed_status,
    node_update_evals,
)
from drover.model.alloc import DesiredTransition
from drover.model.events import (
    AllocsTransitioned,
    EvalsUpserted,
    Event,
    NodeDeregistered,
    NodeDrainUpdated,
    NodeRegistered,
    NodeStatusUpdated,
)
from drover.model.job import Job
from drover.model.node import NODE_STATUS_INIT, NODE_STATUS_READY
from drover.runtime.bus import HEARTBEAT_SUBJECT, close, connect_streams
from drover.runtime.leader import hold_leadership, wait_for_leadership
from drover.runtime.replica import Replica
from drover.runtime.service import run_service
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, FencedError, NewEvent, libpq_url
from drover.watcher.appending import append_as_leader
from drover.watcher.deployments import watch_deployments

log = logging.getLogger("drover.watcher")
LEADER_LOCK_KEY = 4_646_002
LEASE = "heartbeat-watcher"
SECOND = 1_000_000_000
ALIVE = (NODE_STATUS_READY, NODE_STATUS_INIT)


class Watcher:
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
        """Just became the leader: every live node gets the failover TTL."""
        alive = [n.id for n in self.replica.state.all_nodes() if n.status in ALIVE]
        self.tracker.failover(alive, now, self.failover_ttl)
        log.info("watching %d nodes (failover TTL %.0f s)", len(alive), self.failover_ttl / SECOND)

    def on_event(self, position: int, event: Event, meta: dict[str, Any]) -> None:
        """Registration, or a node coming back, starts the node's clock; a node that left or
        went down has none."""
        now = time.time_ns()
        if isinstance(event, NodeRegistered):
            if event.node.status in ALIVE:
                self.tracker.beat(event.node.id, now, self.longest_ttl(), self.grace)
        elif isinstance(event, NodeStatusUpdated):
            if event.status in ALIVE:
                if event.node_id not in self.tracker.deadline:
                    self.tracker.beat(event.node_id, now, self.longest_ttl(), self.grace)
            else:
                self.tracker.forget(event.node_id)
        elif isinstance(event, NodeDeregistered):
            self.tracker.forget(event.node_id)
        self.wake.set()

    def on_heartbeat(self, data: bytes) -> None:
        body = json.loads(data)
        now = time.time_ns()
        for node_id, ttl in zip(body["NodeIDs"], body["TTLs"], strict=True):
            self.tracker.beat(node_id, now, int(ttl), self.grace)
        self.wake.set()

    def missed(self, node_ids: list[str], now: int) -> list[Event]:
        """The events for nodes that missed their heartbeat: status and node-update evals."""
        state = self.replica.state
        events: list[Event] = []
        evals = []
        system = [j for j in state.jobs.values() if j.is_system() and not j.stop]
        for node_id in node_ids:
            node = state.node(node_id)
            if node is None or node.status not in ALIVE:
                continue
            allocs = state.allocs_by_node(node_id)
            jobs: dict[tuple[str, str], Job] = {}
            for a in allocs:
                job = state.job(a.namespace, a.job_id)
                if job is not None:
                    jobs[(a.namespace, a.job_id)] = job
            status = missed_status(allocs, jobs)
            log.info("node %s missed its heartbeat: %s", node_id, status)
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


async def drain(replica: Replica, store: EventStore, epoch: int, stop: asyncio.Event) -> None:
    """Move allocs off draining nodes, a batch at a time, until each node is empty."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.5)
        now = time.time_ns()
        events: list[Event] = []
        for node in list(replica.state.all_nodes()):
            if node.drain_strategy is None:
                continue
            step = drain_step(replica.state, node, now)
            if step.done:
                log.info("node %s drained", node.id)
                events.append(NodeDrainUpdated(node_id=node.id, drain_strategy=None))
            elif step.migrate:
                log.info("node %s: migrating %d allocs", node.id, len(step.migrate))
                events.append(
                    AllocsTransitioned(
                        transitions={a.id: DesiredTransition(migrate=True) for a in step.migrate},
                        evals=step.evals,
                    )
                )
        if not events:
            continue
        recorded = await append_as_leader(
            store, [NewEvent(e) for e in events], (LEASE, epoch), stop, "drainer"
        )
        if recorded is None:
            continue
        # The next step must see these marks, or it would mark the same allocs again.
        await replica.wait_for(recorded[-1].position)


async def run(settings: Settings, stop: asyncio.Event) -> None:
    store = EventStore(settings.database_url)
    nc, js = await connect_streams(settings.nats_url, "watcher")
    holder = f"{socket.gethostname()}:{os.getpid()}"
    lock_conn = await wait_for_leadership(libpq_url(settings.database_url), LEADER_LOCK_KEY, stop)
    if lock_conn is None:
        await close(nc)
        store.close()
        return
    epoch = await asyncio.to_thread(store.acquire_lease, LEASE, holder)
    log.info("watcher %s is the leader (epoch %d)", holder, epoch)
    replica = Replica(store, js)
    watcher = Watcher(settings, replica)
    replica.listeners.append(watcher.on_event)

    async def on_heartbeat(msg: Msg) -> None:
        try:
            watcher.on_heartbeat(msg.data)
        except (ValueError, KeyError, TypeError) as e:
            log.warning("bad heartbeat message: %s", e)

    # Heard before the snapshot is taken, so no beat in between is lost.
    sub = await nc.subscribe(HEARTBEAT_SUBJECT, cb=on_heartbeat)
    await replica.start()
    watcher.start(time.time_ns())
    holding = asyncio.create_task(hold_leadership(lock_conn, stop))
    drainer = asyncio.create_task(drain(replica, store, epoch, stop))
    deployments = asyncio.create_task(watch_deployments(replica, store, (LEASE, epoch), stop))
    pending: list[str] = []
    try:
        while not stop.is_set():
            watcher.wake.clear()  # before looking: a wake-up during the append below is kept
            now = time.time_ns()
            pending.extend(watcher.tracker.expired(now))
            if pending:
                events = watcher.missed(pending, now)
                try:
                    if events:
                        await asyncio.to_thread(
                            store.append, [NewEvent(e) for e in events], fence=(LEASE, epoch)
                        )
                    pending = []
                except FencedError:
                    log.error("fenced: a newer watcher leads; stepping down")
                    break
                except Exception as e:  # Postgres away: keep the missed nodes and retry
                    log.warning("could not record missed heartbeats: %s; retrying", e)
                    await asyncio.sleep(0.5)
                    continue
            nxt = watcher.tracker.next_deadline()
            timeout = 1.0 if nxt is None else max(0.01, min(1.0, (nxt - time.time_ns()) / SECOND))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(watcher.wake.wait(), timeout)
    finally:
        stop.set()
        holding.cancel()
        await drainer
        await deployments
        await sub.unsubscribe()
        await close(nc)
        await lock_conn.close()
        store.close()


def main() -> None:
    run_service("watcher", run)


if __name__ == "__main__":
    main()
