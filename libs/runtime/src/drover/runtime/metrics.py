"""A process's own metrics (gauges, counters, timings) and their way to `GET /v1/metrics`.

Each service keeps its metrics in memory (`Metrics`) and puts a snapshot into the JetStream
key-value bucket `drover-metrics` every `PUBLISH_EVERY` seconds, under `<service>.<pid>`; the
bucket keeps only the newest snapshot of each key and drops keys older than `KEEP_FOR`, so a
process that died leaves the endpoint within that time. The API reads the bucket when scraped.

Recording is a dict lookup and a few additions: timings go into fixed buckets (`BUCKETS`,
seconds), so the API can time every request without measurable cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from bisect import bisect_left
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import NoKeysError
from nats.js.kv import KeyValue

from drover.runtime.bus import bucket_replicas

log = logging.getLogger("drover.metrics")

BUCKET = "drover-metrics"
PUBLISH_EVERY = 2.0
KEEP_FOR = 15.0
# Upper bounds of the timing buckets, in seconds (the last bucket is everything above).
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

Labels = tuple[tuple[str, str], ...]
Key = tuple[str, Labels]


def _labels(labels: dict[str, str]) -> Labels:
    return tuple(sorted(labels.items()))


class Timing:
    """Observations of one duration: bucket counts, count, sum, sum of squares, min and max."""

    __slots__ = ("buckets", "count", "max", "min", "sum", "sumsq")

    def __init__(self) -> None:
        self.buckets = [0] * (len(BUCKETS) + 1)
        self.count = 0
        self.sum = 0.0
        self.sumsq = 0.0
        self.min = 0.0
        self.max = 0.0

    def observe(self, seconds: float) -> None:
        self.buckets[bisect_left(BUCKETS, seconds)] += 1
        if not self.count or seconds < self.min:
            self.min = seconds
        if seconds > self.max:
            self.max = seconds
        self.count += 1
        self.sum += seconds
        self.sumsq += seconds * seconds

    def as_json(self) -> dict[str, Any]:
        return {
            "Buckets": list(self.buckets),
            "Count": self.count,
            "Sum": self.sum,
            "SumSq": self.sumsq,
            "Min": self.min,
            "Max": self.max,
        }


# Called just before each snapshot, to set gauges that are read rather than recorded.
Collect = Callable[["Metrics"], Awaitable[None] | None]


class Metrics:
    """One process's metrics. Names are dotted (`plan.apply`); labels are plain strings."""

    def __init__(self, service: str, instance: str | None = None) -> None:
        self.service = service
        self.instance = instance or str(os.getpid())
        self.started = time.time()
        self.gauges: dict[Key, float] = {}
        self.counters: dict[Key, list[float]] = {}
        self.timings: dict[Key, Timing] = {}
        self.collectors: list[Collect] = []

    def gauge(self, name: str, value: float, **labels: str) -> None:
        self.gauges[(name, _labels(labels))] = value

    def count(self, name: str, n: float = 1, **labels: str) -> None:
        """Add `n` to a counter (kept as Nomad's are: additions, sum, sum of squares, smallest
        and largest)."""
        counter = self.counters.get((name, _labels(labels)))
        if counter is None:
            self.counters[(name, _labels(labels))] = [1, n, n * n, n, n]
            return
        counter[0] += 1
        counter[1] += n
        counter[2] += n * n
        counter[3] = min(counter[3], n)
        counter[4] = max(counter[4], n)

    def timing(self, name: str, **labels: str) -> Timing:
        """The timing of that name and labels (kept: a hot path looks it up once)."""
        key = (name, _labels(labels))
        found = self.timings.get(key)
        if found is None:
            found = self.timings[key] = Timing()
        return found

    async def collect(self) -> None:
        for fn in self.collectors:
            try:
                result = fn(self)
                if result is not None:
                    await result
            except Exception as e:
                log.warning("collecting metrics failed: %s", e)

    def snapshot(self) -> dict[str, Any]:
        """The metrics as JSON: what is published, and what the API renders."""
        return {
            "Service": self.service,
            "Instance": self.instance,
            "Time": time.time(),
            "Started": self.started,
            "Gauges": [{"Name": n, "Labels": dict(lb), "Value": v} for (n, lb), v in self.gauges.items()],
            "Counters": [
                {
                    "Name": n,
                    "Labels": dict(lb),
                    "Count": c[0],
                    "Sum": c[1],
                    "SumSq": c[2],
                    "Min": c[3],
                    "Max": c[4],
                }
                for (n, lb), c in self.counters.items()
            ],
            "Timings": [
                {"Name": n, "Labels": dict(lb), **t.as_json()} for (n, lb), t in self.timings.items()
            ],
        }


async def bucket(js: JetStreamContext) -> KeyValue:
    """The metrics' bucket, created if it is not there yet (in memory: metrics need no disk)."""
    try:
        return await js.key_value(BUCKET)
    except Exception:
        return await js.create_key_value(
            KeyValueConfig(
                bucket=BUCKET,
                history=1,
                ttl=KEEP_FOR,
                storage=StorageType.MEMORY,
                replicas=bucket_replicas(js),
            )
        )


async def publish(
    metrics: Metrics, js: JetStreamContext, stop: asyncio.Event, every: float = PUBLISH_EVERY
) -> None:
    """Put `metrics` into the bucket every `every` seconds until `stop`; failures are logged
    and retried at the next turn (metrics never stop a service)."""
    kv: KeyValue | None = None
    key = f"{metrics.service}.{metrics.instance}"
    failing = False
    while not stop.is_set():
        try:
            kv = kv or await bucket(js)
            await metrics.collect()
            await kv.put(key, json.dumps(metrics.snapshot()).encode())
            failing = False
        except Exception as e:
            # Once per outage, not every turn of it.
            log.log(logging.DEBUG if failing else logging.WARNING, "publishing metrics failed: %s", e)
            failing = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)


@contextlib.asynccontextmanager
async def published(metrics: Metrics, js: JetStreamContext, stop: asyncio.Event) -> AsyncIterator[Metrics]:
    """Publish `metrics` while the block runs; at its end the snapshot is taken away (a process
    killed leaves it until the bucket's TTL drops it)."""
    task = asyncio.create_task(publish(metrics, js, stop))
    try:
        yield metrics
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        with contextlib.suppress(Exception):
            kv = await asyncio.wait_for(bucket(js), 1.0)
            await asyncio.wait_for(kv.delete(f"{metrics.service}.{metrics.instance}"), 1.0)


async def read_all(js: JetStreamContext) -> list[dict[str, Any]]:
    """Every live process's newest snapshot."""
    kv = await bucket(js)
    try:
        keys = await kv.keys()
    except NoKeysError:
        return []
    out = []
    for key in sorted(keys):
        with contextlib.suppress(Exception):
            entry = await kv.get(key)
            if entry.value:
                out.append(json.loads(entry.value))
    return out


class Followed(Protocol):
    @property
    def position(self) -> int: ...

    async def lag(self) -> int: ...


def follow_replica(metrics: Metrics, replica: Followed) -> None:
    """Report the replica's position and how far it is behind the log."""

    async def collect(f: Metrics) -> None:
        f.gauge("replica.lag", await replica.lag())
        f.gauge("replica.position", replica.position)

    metrics.collectors.append(collect)
