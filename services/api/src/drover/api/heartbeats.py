"""Client heartbeats through the API: whether a beat writes anything (a node coming back), the
TTL each node is handed, and the relay of heartbeats to the leader's heartbeater over core NATS
(never to the event log)."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time

from nats.aio.client import Client

from drover.api.commands import Commands
from drover.api.fresh import Fresh
from drover.control.change import Change
from drover.control.commands import nodes
from drover.control.leader.heartbeat import heartbeat_ttl
from drover.model.durations import SECOND
from drover.model.node import NODE_STATUS_READY
from drover.runtime.bus import HEARTBEAT_SUBJECT, connect
from drover.runtime.settings import Settings
from drover.runtime.store.queries import Reads
from drover.runtime.watches import node_key

# What a beat keeps in its Fresh: each node's status, under its node's key, for as many nodes
# as a large fleet has (an entry is a few hundred bytes), apart from the reads' answers.
STATUS = "status"
STATUSES_KEPT = 100_000
# Beats are gathered for this long: those answered within it of the first go to the heartbeater
# in one message (one write to NATS, a system call, for many beats), and those that wait on
# the log's head share one read of it. A beat's answer is not awaited by anything else, and
# its TTL is 10 s at least.
GATHER = 0.002

log = logging.getLogger("drover.api")


class Heartbeats:
    def __init__(self, settings: Settings, reads: Reads, fresh: Fresh) -> None:
        self.settings = settings
        self.reads = reads
        self.fresh = fresh
        self.rng = random.Random()
        self._nc: Client | None = None
        self._lock = asyncio.Lock()
        self._nodes = 0
        self._counted_at = 0.0
        # Beats not yet relayed (node -> TTL), the timer that relays them, the relays under way.
        self._due: dict[str, int] = {}
        self._relay: asyncio.TimerHandle | None = None
        self._relaying: set[asyncio.Task[None]] = set()

    async def beat(self, commands: Commands, node_ids: list[str]) -> tuple[Change, int]:
        """nodes.heartbeat's change and the log's index. A beat of nodes all ready writes
        nothing: when each one's status is kept as ready and current (drover.api.fresh), that is
        decided without a statement of its own - most beats, one per node every TTL/2."""
        fresh, keys = self.fresh, [node_key(n) for n in node_ids]
        if fresh.hopeful(STATUS, keys) and (now := await fresh.index(GATHER)) is not None:
            kept = [fresh.get(STATUS, key, now) for key in keys]
            if all(k is not None and k.value == NODE_STATUS_READY for k in kept):
                return Change.of([]), now
        before: list[int] = []

        def decide(reads: Reads) -> Change:
            # The index before the statuses: a change after it is one the watcher hears of.
            before.append(reads.index())
            return nodes.heartbeat(reads, node_ids, time.time_ns())

        change, positions = await commands.run(decide)
        if not change.events:
            # Every node was ready when read (nodes.heartbeat writes only for one that was not).
            for key in keys:
                fresh.keep(STATUS, key, before[-1], NODE_STATUS_READY)
        return change, positions[-1]

    async def ttl(self) -> int:
        """A TTL for one node (ns), scaled to the cluster's size (counted at most every 5 s)."""
        if time.monotonic() - self._counted_at > 5.0:
            self._nodes = await asyncio.to_thread(self.reads.node_count)
            self._counted_at = time.monotonic()
        return heartbeat_ttl(
            max(self._nodes, 1),
            self.rng,
            min_ttl=int(self.settings.heartbeat_min_ttl * SECOND),
            per_second=self.settings.heartbeat_max_per_second,
        )

    async def publish(self, node_ids: list[str], ttls: list[int]) -> None:
        """Pass these beats on to the heartbeater (within GATHER, with the beats answered
        beside them); raises when NATS cannot be reached."""
        nc = self._nc
        if nc is None or nc.is_closed:
            async with self._lock:
                if self._nc is None or self._nc.is_closed:
                    self._nc = await connect(self.settings.nats_url, "api", self.settings.nats_credentials())
        self._due.update(zip(node_ids, ttls, strict=True))
        if self._relay is None:
            self._relay = asyncio.get_running_loop().call_later(GATHER, self._send)

    def _send(self) -> None:
        self._relay = None
        task = asyncio.get_running_loop().create_task(self._publish(self._take()))
        self._relaying.add(task)
        task.add_done_callback(self._relaying.discard)

    def _take(self) -> bytes:
        due, self._due = self._due, {}
        return json.dumps({"NodeIDs": list(due), "TTLs": list(due.values())}).encode()

    async def _publish(self, message: bytes) -> None:
        try:
            assert self._nc is not None
            await self._nc.publish(HEARTBEAT_SUBJECT, message)
        except Exception as e:
            # Answered already: the node beats again within its TTL; the heartbeater's grace covers one lost.
            log.warning("heartbeats not relayed: %s", e)

    async def close(self) -> None:
        if self._relay is not None:
            self._relay.cancel()
            self._relay = None
            if self._due and self._nc is not None:
                await self._publish(self._take())
        if self._relaying:
            await asyncio.wait(self._relaying)
        if self._nc is not None and not self._nc.is_closed:
            await self._nc.close()
