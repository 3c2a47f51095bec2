"""The worker's loop: pull ready evals from the EVALS work queue and work on up to the worker's
depth at once; ack each when its outcome is committed, nack it (with a backoff) when it failed.
An eval that failed at its delivery limit, or is handed out past it (the workers holding it died
or never acked it), is moved to the failed queue, where the leader reaps it
(drover.leader.failed), as Nomad's broker moves it to its failed queue for the leader's reaper.

An eval stays with the worker that took it while that worker sends in-progress beats; one
DROVER_EVAL_ACK_WAIT (10 s) after the last beat JetStream hands it to another worker. Nomad's
broker gives an eval back after its nack timeout (60 s, paused while the eval's plan is being
applied); a Drover worker is a process of its own that can die alone, and the eval it held
should not wait that long. A redelivered eval already done is skipped (drover.worker.worker).

A worker takes its own lane's evals first and the other lane's when it has none: an idle
large-lane worker helps with a burst of small jobs, and either lane keeps going if the other
has no worker."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Coroutine
from dataclasses import dataclass
from typing import Any

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
# In-progress beats a worker sends per ack wait while it works on an eval: one may come up to
# ack_wait x (1 - 1/5) late - the event loop held by a long scheduling pass on a loaded host -
# before the eval is handed to another worker as well.
BEATS_PER_ACK_WAIT = 5


@dataclass(frozen=True)
class Lane:
    """A lane's pull consumer: the next eval, waiting up to `wait` seconds for it."""

    sub: JetStreamContext.PullSubscription

    async def fetch(self, wait: float) -> list[Msg]:
        try:
            return await self.sub.fetch(1, timeout=wait)
        except NatsTimeout:
            return []


async def bind(js: JetStreamContext, subject: str, durable: str, ack_wait: float) -> Lane:
    """A pull subscription to the lane's durable consumer: explicit acks, no limit on evals out
    at once (the broker bounds them), redelivery `ack_wait` after the last in-progress beat
    (`handle`). The consumer is created, or updated to this config if it is there: a consumer
    keeps the config it was made with, and workers restarted with another ack wait (an upgrade,
    a changed setting) would otherwise go on with the old one."""
    config = ConsumerConfig(
        name=durable,
        durable_name=durable,
        filter_subject=subject,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=ack_wait,
        max_ack_pending=-1,
    )
    await js.add_consumer(EVALS_STREAM, config)
    return Lane(await js.pull_subscribe_bind(durable, EVALS_STREAM))


async def subscribe(js: JetStreamContext, lane: str, ack_wait: float) -> tuple[Lane, Lane]:
    """The consumers of the worker's own lane and of the other lane, in that order."""
    small = await bind(js, EVALS_SUBJECT, DURABLE, ack_wait)
    large = await bind(js, EVALS_LARGE_SUBJECT, DURABLE_LARGE, ack_wait)
    return (large, small) if lane == LANE_LARGE else (small, large)


def deliveries(msg: Msg) -> int:
    """How many times the eval in `msg` has been handed out, this time included."""
    return msg.metadata.num_delivered or 1


async def _settle(op: Awaitable[None]) -> None:
    """Ack or nack; if NATS is away the eval is simply redelivered later."""
    try:
        await op
    except Exception as e:
        log.warning("could not settle an eval message: %s", e)


async def _keep_alive(msg: Msg, every: float) -> None:
    """An in-progress beat every `every` seconds until cancelled; one lost to a NATS outage is
    followed by the next."""
    while True:
        await asyncio.sleep(every)
        try:
            await msg.in_progress()
        except Exception as e:
            log.debug("in-progress beat: %s", e)


async def to_failed_queue(worker: Worker, msg: Msg) -> None:
    """Move the eval to the failed queue, then ack it here; if that publish fails it is nacked and
    comes back. A copy published twice (a worker dying between the two) is dropped by the
    stream's duplicate window, and the reaper skips an eval already terminal."""
    original = (msg.headers or {}).get(MSG_ID_HEADER) or str(msg.metadata.sequence.stream)
    try:
        await worker.nc.jetstream().publish(
            EVALS_FAILED_SUBJECT, msg.data, headers={MSG_ID_HEADER: f"failed:{original}"}
        )
    except Exception as e:
        log.warning("could not move an eval to the failed queue: %s", e)
        await _settle(msg.nak(1.0))
        return
    await _settle(msg.ack())


async def handle(worker: Worker, msg: Msg, ack_wait: float) -> None:
    """Work on the eval in `msg`, then ack it - or nack it if that failed. At the delivery limit
    it goes to the failed queue instead (`to_failed_queue`)."""
    n = deliveries(msg)
    if n > DELIVERY_LIMIT:
        log.warning("eval delivered %d times, past the limit (%d): to the failed queue", n, DELIVERY_LIMIT)
        await to_failed_queue(worker, msg)
        return
    # The ack wait is short, so that the eval of a worker that died goes to another within
    # seconds; while this worker is on it, in-progress beats restart it.
    beat = asyncio.create_task(_keep_alive(msg, ack_wait / BEATS_PER_ACK_WAIT))
    try:
        evaluation = Evaluation.model_validate_json(msg.data)
        with _tracer.start_as_current_span(
            "worker.schedule", context=extract(msg.headers), attributes={"eval.id": evaluation.id}
        ):
            await worker.process(evaluation, n)
        beat.cancel()
        await _settle(msg.ack())
    except Exception:
        beat.cancel()
        if n >= DELIVERY_LIMIT:
            log.exception("eval failed at its delivery limit (%d): to the failed queue", DELIVERY_LIMIT)
            await to_failed_queue(worker, msg)
        else:
            log.exception("eval failed; nack")
            await _settle(msg.nak(nack_delay(n)))


async def _unless_stopped(fetch: Coroutine[Any, Any, list[Msg]], stop: asyncio.Event) -> list[Msg]:
    """The fetch's evals, or none when `stop` comes first: a worker told to stop does not wait
    out its own lane's wait (an eval the cancelled fetch had pulled is redelivered after its
    ack wait, as any eval of a worker that went away)."""
    fetching = asyncio.ensure_future(fetch)
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((fetching, stopping), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if not fetching.done():
        fetching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await fetching
        return []
    return fetching.result()


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
            msgs = await _unless_stopped(own.fetch(own_wait), stop) or await other.fetch(OTHER_LANE_WAIT)
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
