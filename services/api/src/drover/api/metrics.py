"""What `GET /v1/metrics` shows, gathered when it is scraped: the cluster's metrics counted from
the projections (drover.runtime.store.metrics), every service's newest snapshot from the
`drover-metrics` bucket (drover.runtime.metrics), and the API's own request timings.

The API times every request in its request guard (`RequestTimings.observe`): one dict lookup
and one bucket increment, the timing found once per (method, route)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from nats.aio.client import Client
from starlette.types import Scope

from drover.runtime import metrics as service_metrics
from drover.runtime.bus import connect
from drover.runtime.metrics import Metrics, Timing
from drover.runtime.settings import NatsCredentials
from drover.runtime.store import EventStore
from drover.runtime.store.metrics import cluster_gauges

log = logging.getLogger("drover.api.metrics")

# How long a scrape waits for NATS, and how long after a failure it does not try again (the
# cluster's metrics are still answered meanwhile).
NATS_TIMEOUT = 1.0
RETRY_AFTER = 5.0


class RequestTimings:
    """The API's request latency by method and route (the route's template, not the path)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self._by_route: dict[tuple[str, str], Timing] = {}

    def observe(self, scope: Scope, seconds: float) -> None:
        route = getattr(scope.get("route"), "path", None) or "unmatched"
        key = (scope["method"], route)
        timing = self._by_route.get(key)
        if timing is None:
            timing = self._by_route[key] = self.metrics.timing("http.request", method=key[0], route=route)
        timing.observe(seconds)


class MetricsGatherer:
    """Gathers what a scrape shows: the cluster's gauges, every service's snapshot, the API's
    own metrics."""

    def __init__(self, store: EventStore, nats_url: str, credentials: NatsCredentials | None = None) -> None:
        self.store = store
        self.nats_url = nats_url
        self.credentials = credentials
        self.own = Metrics("api")
        self.timings = RequestTimings(self.own)
        self._nc: Client | None = None
        self._failed_at = 0.0
        self._lock = asyncio.Lock()

    async def services(self) -> list[dict[str, Any]]:
        """Every live service's newest snapshot; none while NATS cannot be reached."""
        if time.monotonic() - self._failed_at < RETRY_AFTER:
            return []
        try:
            async with self._lock:
                if self._nc is None or self._nc.is_closed:
                    self._nc = await asyncio.wait_for(
                        connect(self.nats_url, "api-metrics", self.credentials), NATS_TIMEOUT
                    )
            return await asyncio.wait_for(service_metrics.read_all(self._nc.jetstream()), NATS_TIMEOUT)
        except Exception as e:
            log.warning("service metrics unavailable: %s", e)
            self._failed_at = time.monotonic()
            return []

    async def gather(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(the cluster's gauges, every process's snapshot with the API's own)."""
        cluster, services = await asyncio.gather(
            asyncio.to_thread(cluster_gauges, self.store), self.services()
        )
        return cluster, [*services, self.own.snapshot()]

    async def close(self) -> None:
        if self._nc is not None and not self._nc.is_closed:
            await self._nc.close()
