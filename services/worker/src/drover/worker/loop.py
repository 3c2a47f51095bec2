"""The worker's loop: pull ready evals from the EVALS work queue and work on up to the worker's
depth at once; ack each when its outcome is committed, nack it (with a backoff) when it failed.
An eval that failed at its delivery limit, or is handed out past it (the workers holding it died
or never acked it), is moved to the failed queue, where the leader reaps it
(drover.leader.failed), as Nomad's broker moves it to its failed queue for the leader's reaper.

A worker takes its own lane's evals first and the other lane's when it has none: an idle
large-lane worker helps with a burst of small jobs, and either lane keeps going if the other
has no worker."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig

from drover.model.evaluation import Evaluation
from drover.runtime.bus import (
    EVALS_FAILED_SUBJECT,
    EVALS_LARGE_SUBJECT,
    EVALS_STREAM,
    EVALS_SUBJECT,
    MSG_ID_HEADER,
)
from drover.runtime.telemetry import extract, tracer
from drover.scheduler.evalflow import DELIVERY_LIMIT, nack_delay
from drover.scheduler.lanes import LANE_LARGE
from drover.worker.worker import Worker

log = logging.getLogger("drover.worker")
_tracer = tracer("drover.worker")
DURABLE = "workers"
DURABLE_LARGE = "workers-large"
# Seconds a worker waits for an eval of its own lane before it looks at the other lane's, and
# how long it waits there. A small-lane worker looks rarely: while it does, its own lane's
# evals go to the next worker waiting. A large-lane worker looks often, so a burst of small
# evals is shared out.
SMALL_LANE_WAIT = 1.0
LARGE_LANE_WAIT = 0.25
OTHER_LANE_WAIT = 0.05
T = TypeVar("T")


@dataclass(frozen=True)
class Delivery:
    """One delivery of an eval message, whichever client fetched it (nats-py here, FastStream in
    drover.worker.fastlanes): its body and headers, how many times it has been delivered, and
    how to settle it."""

    data: bytes
    headers: Mapping[str, str]
    deliveries: int
    sequence: int  # in the stream
    ack: Callable[[], Awaitable[None]]
    nak: Callable[[float], Awaitable[None]]
    in_progress: Callable[[], Awaitable[None]]


class Lane(Protocol):
    """A lane's consumer: the next eval, waiting up to `wait` seconds for it."""

    async def fetch(self, wait: float) -> list[Delivery]: ...


def delivery(msg: Msg) -> Delivery:
    meta = msg.metadata
    return Delivery(
        msg.data,
        msg.headers or {},
        meta.num_delivered or 1,
        meta.sequence.stream if meta.sequence else 0,
        msg.ack,
        lambda delay: msg.nak(delay=delay),
        msg.in_progress,
    )


def consumer_config(ack_wait: float) -> ConsumerConfig:
    """Both lanes' durable consumers: explicit acks, no limit on evals out at once (the broker
    bounds them), redelivery after `ack_wait` without a heartbeat."""
    return ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=ack_wait, max_ack_pending=-1)


def lanes_in_order(lane: str, small: T, large: T) -> tuple[T, T]:
    """The worker's own lane's consumer first, the other lane's second."""
    return (large, small) if lane == LANE_LARGE else (small, large)


@dataclass(frozen=True)
class NatsLane:
    """A lane's pull consumer through nats-py."""

    sub: JetStreamContext.PullSubscription

    async def fetch(self, wait: float) -> list[Delivery]:
        try:
            return [delivery(m) for m in await self.sub.fetch(1, timeout=wait)]
        except NatsTimeout:
            return []


async def subscribe(js: JetStreamContext, lane: str, ack_wait: float) -> tuple[Lane, Lane]:
    """The consumers of the worker's own lane and of the other lane, in that order."""
    config = consumer_config(ack_wait)
    small = await js.pull_subscribe(EVALS_SUBJECT, durable=DURABLE, stream=EVALS_STREAM, config=config)
    large = await js.pull_subscribe(
        EVALS_LARGE_SUBJECT, durable=DURABLE_LARGE, stream=EVALS_STREAM, config=config
    )
    return lanes_in_order(lane, NatsLane(small), NatsLane(large))


async def _settle(op: Awaitable[None]) -> None:
    """Ack or nack; if NATS is away the eval is simply redelivered later."""
    try:
        await op
    except Exception as e:
        log.warning("could not settle an eval message: %s", e)


async def _keep_alive(msg: Delivery, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        try:
            await msg.in_progress()
        except Exception:
            return


async def to_failed_queue(worker: Worker, msg: Delivery) -> None:
    """Move the eval to the failed queue, then ack it here; if that publish fails it is nacked and
    comes back. A copy published twice (a worker dying between the two) is dropped by the
    stream's duplicate window, and the reaper skips an eval already terminal."""
    original = msg.headers.get(MSG_ID_HEADER) or str(msg.sequence)
    try:
        await worker.nc.jetstream().publish(
            EVALS_FAILED_SUBJECT, msg.data, headers={MSG_ID_HEADER: f"failed:{original}"}
        )
    except Exception as e:
        log.warning("could not move an eval to the failed queue: %s", e)
        await _settle(msg.nak(1.0))
        return
    await _settle(msg.ack())


async def handle(worker: Worker, msg: Delivery, ack_wait: float) -> None:
    """Work on the eval in `msg`, then ack it - or nack it if that failed. At the delivery limit
    it goes to the failed queue instead (`to_failed_queue`)."""
    deliveries = msg.deliveries
    if deliveries > DELIVERY_LIMIT:
        log.warning(
            "eval delivered %d times, past the limit (%d): to the failed queue", deliveries, DELIVERY_LIMIT
        )
        await to_failed_queue(worker, msg)
        return
    # Tell JetStream we are still on it, so a long eval is not redelivered meanwhile.
    beat = asyncio.create_task(_keep_alive(msg, ack_wait / 3))
    try:
        ev = Evaluation.model_validate_json(msg.data)
        with _tracer.start_as_current_span(
            "worker.schedule", context=extract(msg.headers), attributes={"eval.id": ev.id}
        ):
            await worker.process(ev, deliveries)
        beat.cancel()
        await _settle(msg.ack())
    except Exception:
        beat.cancel()
        if deliveries >= DELIVERY_LIMIT:
            log.exception("eval failed at its delivery limit (%d): to the failed queue", DELIVERY_LIMIT)
            await to_failed_queue(worker, msg)
        else:
            log.exception("eval failed; nack")
            await _settle(msg.nak(nack_delay(deliveries)))


async def work(
    worker: Worker, own: Lane, other: Lane, lane: str, ack_wait: float, stop: asyncio.Event
) -> None:
    """Hand evals to `worker`, its own lane's (`own`) first, until `stop`; then let those it
    works on finish."""
    own_wait = LARGE_LANE_WAIT if lane == LANE_LARGE else SMALL_LANE_WAIT
    busy: set[asyncio.Task[None]] = set()
    idle_since = time.perf_counter()

    def finished(task: asyncio.Task[None]) -> None:
        nonlocal idle_since
        busy.discard(task)
        if not busy:
            idle_since = time.perf_counter()

    while not stop.is_set():
        if len(busy) >= worker.depth:
            await asyncio.wait(busy, return_when=asyncio.FIRST_COMPLETED)
            continue
        try:
            msgs = await own.fetch(own_wait) or await other.fetch(OTHER_LANE_WAIT)
        except Exception as e:
            log.warning("fetch: %s", e)
            await asyncio.sleep(0.5)
            continue
        if not msgs:
            continue
        if not busy:
            log.debug("idle %.0f ms before the next eval", (time.perf_counter() - idle_since) * 1000)
        for msg in msgs:
            task = asyncio.create_task(handle(worker, msg, ack_wait))
            busy.add(task)
            task.add_done_callback(finished)
    if busy:
        await asyncio.wait(busy)
