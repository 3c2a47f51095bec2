"""`drover sim`'s nodes as the servers see them alive: each registered as the agent registers it
(tried again while the servers cannot be reached), then beating at half the TTL it was handed,
in batches of up to 1,000 nodes, each batch sent on its own as agents beat independently."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import random
import time
from typing import Any

import httpx

from drover.model.durations import SECOND

log = logging.getLogger("drover.sim")
BATCH = 1000


class NodeBeats:
    """Registration and heartbeats of a simulator's nodes, with their figures."""

    def __init__(self, http: httpx.AsyncClient, secret_id: str) -> None:
        self.http = http
        self.secret_id = secret_id
        self.next_beat: list[tuple[float, str]] = []  # (when, node), a heap
        self.silenced: set[str] = set()
        # Per node: when its last heartbeat was answered (Unix s) and the TTL it was handed (s).
        self.last_beat: dict[str, tuple[float, float]] = {}
        self.rng = random.Random()
        self.heartbeats = 0
        self.batches = 0
        self.errors = 0
        self.slowest_s = 0.0  # the longest a batch waited for its answer
        self._in_flight: set[asyncio.Task[None]] = set()

    async def register(self, nodes: list[dict[str, Any]], concurrency: int = 16) -> None:
        queue = list(nodes)

        async def one() -> None:
            while queue:
                node = queue.pop()
                r = await self._register_node(node)
                ttl = int(r.json()["HeartbeatTTL"]) / SECOND
                # First beat within the first half of the TTL, spread so batches stay even.
                first = time.monotonic() + self.rng.uniform(0.1, 0.5) * ttl
                heapq.heappush(self.next_beat, (first, node["ID"]))

        await asyncio.gather(*(one() for _ in range(concurrency)))

    async def _register_node(self, node: dict[str, Any]) -> httpx.Response:
        """As the agent registers: a connection lost or a server unavailable (5xx) is tried
        again a second later; a refusal (4xx) ends the simulator."""
        while True:
            try:
                r = await self.http.put(
                    "/v1/drover/node/register", json={"Node": {**node, "SecretID": self.secret_id}}
                )
                if r.status_code < 500:
                    return r.raise_for_status()
                log.warning("registering %s: %s %s; will retry", node["ID"], r.status_code, r.text[:200])
            except httpx.TransportError as e:
                log.warning("registering %s: %r; will retry", node["ID"], e)
            await asyncio.sleep(1.0)

    async def heartbeat(self, stop: asyncio.Event) -> None:
        """Beat every node due within the next half second, in batches each sent on its own: a
        slow answer holds no other beat."""
        while not stop.is_set():
            now = time.monotonic()
            due: list[str] = []
            while self.next_beat and self.next_beat[0][0] <= now + 0.5:
                _, node_id = heapq.heappop(self.next_beat)
                if node_id not in self.silenced:
                    due.append(node_id)
            for i in range(0, len(due), BATCH):
                beat = asyncio.create_task(self._beat(due[i : i + BATCH]))
                self._in_flight.add(beat)
                beat.add_done_callback(self._in_flight.discard)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)
        for beat in list(self._in_flight):
            beat.cancel()

    async def _beat(self, ids: list[str]) -> None:
        sent = time.monotonic()
        try:
            r = await self.http.put("/v1/drover/heartbeats", json={"NodeIDs": ids})
            r.raise_for_status()
            ttls = r.json()["HeartbeatTTLs"]
            self.heartbeats += len(ids)
            self.batches += 1
        except (httpx.HTTPError, KeyError) as e:
            self.errors += 1
            log.warning("heartbeat batch failed: %s", e)
            ttls = {}
        t, wall = time.monotonic(), time.time()
        self.slowest_s = max(self.slowest_s, t - sent)
        for node_id in ids:
            ttl = int(ttls.get(node_id, 2 * SECOND)) / SECOND
            heapq.heappush(self.next_beat, (t + ttl / 2, node_id))
            if node_id in ttls:
                self.last_beat[node_id] = (wall, ttl)
