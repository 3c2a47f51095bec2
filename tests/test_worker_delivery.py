"""The worker loop's delivery limit on real NATS JetStream: an eval whose scheduling fails at its
third delivery, and one handed out a fourth time, go to the failed queue (where the
leader reaps them) instead of back to the workers; a failed eval is nacked with its delay, and
one worked on past the ack wait is kept by its in-progress beats. With either eval consumer
(nats-py, FastStream)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from nats.js import JetStreamContext

from drover.model import Evaluation
from drover.runtime.bus import EVALS_FAILED_SUBJECT, EVALS_STREAM, EVALS_SUBJECT, MSG_ID_HEADER
from drover.runtime.replica import Replica
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore
from drover.scheduler.evalflow import nack_delay
from drover.worker.loop import Delivery, Lane, NatsLane, handle
from drover.worker.service import lanes
from drover.worker.worker import Worker

ACK_WAIT = 30.0


class FailingWorker(Worker):
    """Its scheduling fails every time, as a bug in the scheduler would make it."""

    def __init__(self, js: JetStreamContext, store: EventStore) -> None:
        super().__init__(js._nc, Replica(store, js))
        self.deliveries: list[int] = []

    async def process(self, ev: Evaluation, deliveries: int) -> None:
        self.deliveries.append(deliveries)
        raise RuntimeError("scheduling failed")


class SlowWorker(Worker):
    """Its scheduling takes `seconds`."""

    def __init__(self, js: JetStreamContext, store: EventStore, seconds: float) -> None:
        super().__init__(js._nc, Replica(store, js))
        self.seconds = seconds

    async def process(self, ev: Evaluation, deliveries: int) -> None:
        await asyncio.sleep(self.seconds)


@pytest.fixture(params=["nats", "faststream"])
def consumer(request: pytest.FixtureRequest) -> str:
    """DROVER_WORKER_CONSUMER: each test runs with either."""
    return str(request.param)


@asynccontextmanager
async def small_lane(
    nats_url: str, js: JetStreamContext, consumer: str, ack_wait: float
) -> AsyncIterator[Lane]:
    """The small lane's consumer, as a worker built with `consumer` has it."""
    settings = Settings(nats_url=nats_url, worker_consumer=consumer, eval_ack_wait=ack_wait)
    async with lanes(settings, js) as (own, _):
        yield own


@pytest.fixture
async def own_lane(nats_url: str, js_fresh: JetStreamContext, consumer: str) -> AsyncIterator[Lane]:
    async with small_lane(nats_url, js_fresh, consumer, ACK_WAIT) as own:
        yield own


async def deliver(lane: Lane, wait: float = 5.0) -> Delivery:
    got = await lane.fetch(wait)
    assert len(got) == 1, f"no eval delivered in {wait} s"
    return got[0]


async def publish(js: JetStreamContext, ev: Evaluation) -> None:
    # Each test's evals have IDs of their own: the stream's duplicate window outlives a purge.
    await js.publish(
        EVALS_SUBJECT,
        ev.model_dump_json(by_alias=True).encode(),
        headers={MSG_ID_HEADER: f"{ev.id}:{ev.modify_index}"},
    )


async def test_an_eval_goes_to_the_failed_queue_at_its_delivery_limit(
    store: EventStore, js_fresh: JetStreamContext, own_lane: Lane, consumer: str
) -> None:
    js, own = js_fresh, own_lane
    worker = FailingWorker(js, store)
    failed = NatsLane(await js.pull_subscribe(EVALS_FAILED_SUBJECT, durable="reaper", stream=EVALS_STREAM))

    # Scheduling fails at the third delivery: no nack, the failed queue.
    ev = Evaluation(id=f"e1-{consumer}", job_id="web", modify_index=7)
    await publish(js, ev)
    for _ in range(2):
        await (await deliver(own)).nak(0)  # two deliveries that failed before
    await handle(worker, await deliver(own), ack_wait=ACK_WAIT)
    assert worker.deliveries == [3]
    moved = await deliver(failed)
    assert Evaluation.model_validate_json(moved.data).id == f"e1-{consumer}"
    assert (moved.headers or {})[MSG_ID_HEADER] == f"failed:e1-{consumer}:7"
    await moved.ack()

    # Handed out a fourth time (the workers holding it died): moved without being scheduled.
    ev2 = Evaluation(id=f"e2-{consumer}", job_id="api", modify_index=9)
    await publish(js, ev2)
    for _ in range(3):
        await (await deliver(own)).nak(0)
    await handle(worker, await deliver(own), ack_wait=ACK_WAIT)
    assert worker.deliveries == [3]
    assert Evaluation.model_validate_json((await deliver(failed)).data).id == f"e2-{consumer}"

    # Both were acked on the workers' side: nothing comes back to them.
    info = await js.consumer_info(EVALS_STREAM, "workers")
    assert info.num_ack_pending == 0 and info.num_pending == 0


async def test_a_failed_eval_is_nacked_with_its_delay(
    store: EventStore, js_fresh: JetStreamContext, own_lane: Lane, consumer: str
) -> None:
    await publish(js_fresh, Evaluation(id=f"e3-{consumer}", job_id="web", modify_index=3))
    await handle(FailingWorker(js_fresh, store), await deliver(own_lane), ack_wait=ACK_WAIT)
    nacked = time.monotonic()
    again = await deliver(own_lane, wait=nack_delay(1) + 5)
    waited = time.monotonic() - nacked
    assert again.deliveries == 2
    assert nack_delay(1) - 0.2 <= waited, f"redelivered after {waited:.2f} s, before its delay"
    await again.ack()


async def test_in_progress_beats_keep_a_long_eval(
    store: EventStore, nats_url: str, js_fresh: JetStreamContext, consumer: str
) -> None:
    """Worked on for 2.5 times the ack wait: never redelivered meanwhile, acked at the end."""
    async with small_lane(nats_url, js_fresh, consumer, ack_wait=1.0) as own:
        await publish(js_fresh, Evaluation(id=f"e4-{consumer}", job_id="web", modify_index=4))
        worker = SlowWorker(js_fresh, store, 2.5)
        slow = asyncio.create_task(handle(worker, await deliver(own), ack_wait=1.0))
        assert await own.fetch(3.0) == [], "redelivered while it was worked on"
        await slow
        info = await js_fresh.consumer_info(EVALS_STREAM, "workers")
        assert info.num_ack_pending == 0 and info.num_redelivered == 0 and info.num_pending == 0
