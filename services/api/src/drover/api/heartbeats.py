"""Client heartbeats through the API: the TTL each node is handed, and the relay of heartbeats
to the leader's heartbeater over core NATS (never to the event log)."""

from __future__ import annotations

import asyncio
import json
import random
import time

from nats.aio.client import Client

from drover.control.leader.heartbeat import heartbeat_ttl
from drover.model.durations import SECOND
from drover.runtime.bus import HEARTBEAT_SUBJECT, connect
from drover.runtime.settings import Settings
from drover.runtime.store.queries import Reads


class Heartbeats:
    def __init__(self, settings: Settings, reads: Reads) -> None:
        self.settings = settings
        self.reads = reads
        self.rng = random.Random()
        self._nc: Client | None = None
        self._lock = asyncio.Lock()
        self._nodes = 0
        self._counted_at = 0.0

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
        """Tell the heartbeater these nodes beat; raises when NATS cannot be reached."""
        async with self._lock:
            if self._nc is None or self._nc.is_closed:
                self._nc = await connect(self.settings.nats_url, "api", self.settings.nats_credentials())
        await self._nc.publish(HEARTBEAT_SUBJECT, json.dumps({"NodeIDs": node_ids, "TTLs": ttls}).encode())

    async def close(self) -> None:
        if self._nc is not None and not self._nc.is_closed:
            await self._nc.close()
