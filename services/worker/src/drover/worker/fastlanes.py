"""The lanes' consumers built with FastStream (DROVER_WORKER_CONSUMER=faststream): the same
durable pull consumers as drover.worker.loop's nats-py ones (explicit acks, the same ack wait,
no limit on evals out at once), fetched one eval at a time with the subscriber's `get_one`, so
the loop keeps its own-lane-first order and its depth. FastStream's handler loop is not used:
it fetches for each subscriber on its own, and a worker could then not prefer its own lane.

FastStream holds its own connection (reconnecting forever across a NATS restart); the worker's
nats-py connection still carries its replica, plan requests and the failed queue."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from faststream import AckPolicy
from faststream.nats import JStream, NatsBroker, NatsMessage, PullSub
from faststream.nats.subscriber.usecases import PullStreamSubscriber

from drover.runtime.bus import EVALS_LARGE_SUBJECT, EVALS_STREAM, EVALS_SUBJECT
from drover.worker.loop import DURABLE, DURABLE_LARGE, Delivery, Lane, consumer_config, lanes_in_order


def delivery(msg: NatsMessage) -> Delivery:
    meta = msg.raw_message.metadata
    return Delivery(
        msg.body,
        msg.headers,
        meta.num_delivered or 1,
        meta.sequence.stream if meta.sequence else 0,
        msg.ack,
        lambda delay: msg.nack(delay=delay),
        msg.in_progress,
    )


@dataclass(frozen=True)
class FastStreamLane:
    """A lane's pull consumer through a FastStream subscriber."""

    sub: PullStreamSubscriber

    async def fetch(self, wait: float) -> list[Delivery]:
        msg = await self.sub.get_one(timeout=wait)
        return [] if msg is None else [delivery(msg)]


@asynccontextmanager
async def subscribe(nats_url: str, lane: str, ack_wait: float) -> AsyncIterator[tuple[Lane, Lane]]:
    """The consumers of the worker's own lane and of the other lane, in that order, while the
    broker runs."""
    # Its per-message logging at DEBUG: the worker logs what it does with each eval.
    broker = NatsBroker(nats_url, max_reconnect_attempts=-1, reconnect_time_wait=1, log_level=logging.DEBUG)
    stream = JStream(EVALS_STREAM, declare=False)

    def lane_of(subject: str, durable: str) -> FastStreamLane:
        sub = broker.subscriber(
            subject,
            stream=stream,
            durable=durable,
            pull_sub=PullSub(batch_size=1),
            ack_policy=AckPolicy.MANUAL,
            config=consumer_config(ack_wait),
        )
        assert isinstance(sub, PullStreamSubscriber)
        return FastStreamLane(sub)

    small, large = lane_of(EVALS_SUBJECT, DURABLE), lane_of(EVALS_LARGE_SUBJECT, DURABLE_LARGE)
    await broker.start()
    try:
        yield lanes_in_order(lane, small, large)
    finally:
        await broker.stop()
