"""The worker loop's delivery limit on real NATS JetStream: an eval whose scheduling fails at its
third delivery, and one handed out a fourth time, go to the failed queue (where the
leader reaps them) instead of back to the workers; a failed eval is nacked with its delay, one
worked on past the ack wait is kept by its in-progress beats, and a worker started with another
ack wait than the consumers were made with brings them to its own."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from drover.model import Evaluation
from drover.runtime.bus import EVALS_FAILED_SUBJECT, EVALS_STREAM, EVALS_SUBJECT, MSG_ID_HEADER
from drover.runtime.replica import Replica
from drover.runtime.store import EventStore
from drover.scheduler.evalflow import nack_delay
from drover.worker.loop import DURABLE, DURABLE_LARGE, Lane, deliveries, handle, subscribe
from drover.worker.worker import Worker

ACK_WAIT = 30.0


class FailingWorker(Worker):
    """Its scheduling fails every time, as a bug in the scheduler would make it."""

    def __init__(self, js: JetStreamContext, store: EventStore) -> None:
        super().__init__(js._nc, Replica(store, js))
        self.deliveries: list[int] = []

    async def process(self, evaluation: Evaluation, deliveries: int) -> None:
        self.deliveries.append(deliveries)
        raise RuntimeError("scheduling failed")


class SlowWorker(Worker):
    """Its scheduling takes `seconds`."""

    def __init__(self, js: JetStreamContext, store: EventStore, seconds: float) -> None:
        super().__init__(js._nc, Replica(store, js))
        self.seconds = seconds

    async def process(self, evaluation: Evaluation, deliveries: int) -> None:
        await asyncio.sleep(self.seconds)


@pytest.fixture
def tag() -> str:
    """This test's evals' IDs end with it: the stream's duplicate window outlives a purge."""
    return uuid.uuid4().hex[:8]


@pytest.fixture
async def own_lane(js_fresh: JetStreamContext) -> AsyncIterator[Lane]:
    """The small lane's consumer, as a small-lane worker has it."""
    own, _ = await subscribe(js_fresh, "small", ACK_WAIT)
    yield own
    await own.sub.unsubscribe()


async def deliver(lane: Lane, wait: float = 5.0) -> Msg:
    got = await lane.fetch(wait)
    assert len(got) == 1, f"no eval delivered in {wait} s"
    return got[0]


async def publish(js: JetStreamContext, evaluation: Evaluation) -> None:
    # Each test's evals have IDs of their own: the stream's duplicate window outlives a purge.
    await js.publish(
        EVALS_SUBJECT,
        evaluation.model_dump_json(by_alias=True).encode(),
        headers={MSG_ID_HEADER: f"{evaluation.id}:{evaluation.modify_index}"},
    )


async def test_an_eval_goes_to_the_failed_queue_at_its_delivery_limit(
    store: EventStore, js_fresh: JetStreamContext, own_lane: Lane, tag: str
) -> None:
    js, own = js_fresh, own_lane
    worker = FailingWorker(js, store)
    failed = Lane(await js.pull_subscribe(EVALS_FAILED_SUBJECT, durable="reaper", stream=EVALS_STREAM))

    # Scheduling fails at the third delivery: no nack, the failed queue.
    evaluation = Evaluation(id=f"e1-{tag}", job_id="web", modify_index=7)
    await publish(js, evaluation)
    for _ in range(2):
        await (await deliver(own)).nak(0)  # two deliveries that failed before
    await handle(worker, await deliver(own), ack_wait=ACK_WAIT)
    assert worker.deliveries == [3]
    moved = await deliver(failed)
    assert Evaluation.model_validate_json(moved.data).id == f"e1-{tag}"
    assert (moved.headers or {})[MSG_ID_HEADER] == f"failed:e1-{tag}:7"
    await moved.ack()

    # Handed out a fourth time (the workers holding it died): moved without being scheduled.
    ev2 = Evaluation(id=f"e2-{tag}", job_id="api", modify_index=9)
    await publish(js, ev2)
    for _ in range(3):
        await (await deliver(own)).nak(0)
    await handle(worker, await deliver(own), ack_wait=ACK_WAIT)
    assert worker.deliveries == [3]
    assert Evaluation.model_validate_json((await deliver(failed)).data).id == f"e2-{tag}"

    # Both were acked on the workers' side: nothing comes back to them.
    info = await js.consumer_info(EVALS_STREAM, "workers")
    assert info.num_ack_pending == 0 and info.num_pending == 0


async def test_a_failed_eval_is_nacked_with_its_delay(
    store: EventStore, js_fresh: JetStreamContext, own_lane: Lane, tag: str
) -> None:
    await publish(js_fresh, Evaluation(id=f"e3-{tag}", job_id="web", modify_index=3))
    await handle(FailingWorker(js_fresh, store), await deliver(own_lane), ack_wait=ACK_WAIT)
    nacked = time.monotonic()
    again = await deliver(own_lane, wait=nack_delay(1) + 5)
    waited = time.monotonic() - nacked
    assert deliveries(again) == 2
    assert nack_delay(1) - 0.2 <= waited, f"redelivered after {waited:.2f} s, before its delay"
    await again.ack()


async def test_in_progress_beats_keep_a_long_eval(
    store: EventStore, js_fresh: JetStreamContext, tag: str
) -> None:
    """Worked on for 2.5 times the ack wait: never redelivered meanwhile, acked at the end."""
    own, _ = await subscribe(js_fresh, "small", ack_wait=1.0)
    await publish(js_fresh, Evaluation(id=f"e4-{tag}", job_id="web", modify_index=4))
    worker = SlowWorker(js_fresh, store, 2.5)
    slow = asyncio.create_task(handle(worker, await deliver(own), ack_wait=1.0))
    assert await own.fetch(3.0) == [], "redelivered while it was worked on"
    await slow
    info = await js_fresh.consumer_info(EVALS_STREAM, "workers")
    assert info.num_ack_pending == 0 and info.num_redelivered == 0 and info.num_pending == 0


async def test_an_eval_without_beats_goes_to_another_worker_after_the_ack_wait(
    js_fresh: JetStreamContext, tag: str
) -> None:
    """Its worker gone (it neither acks nor beats): the next worker gets it one ack wait after
    it was handed out, not sooner."""
    gone, _ = await subscribe(js_fresh, "small", ack_wait=2.0)
    await publish(js_fresh, Evaluation(id=f"e5-{tag}", job_id="web", modify_index=5))
    await deliver(gone)
    held = time.monotonic()
    await gone.sub.unsubscribe()
    other, _ = await subscribe(js_fresh, "small", ack_wait=2.0)
    again = await deliver(other, wait=10.0)
    waited = time.monotonic() - held
    assert deliveries(again) == 2
    assert 1.8 <= waited < 5.0, f"redelivered after {waited:.2f} s"
    await again.ack()


async def test_a_worker_brings_the_consumers_to_its_ack_wait(js_fresh: JetStreamContext) -> None:
    """The consumers made by workers of an older setting (60 s) take the ack wait of a worker
    started with another: a worker binding to them as they were would leave the eval of a worker
    that died waiting the old ack wait."""
    await subscribe(js_fresh, "large", ack_wait=60.0)
    await subscribe(js_fresh, "small", ack_wait=10.0)
    for durable in (DURABLE, DURABLE_LARGE):
        info = await js_fresh.consumer_info(EVALS_STREAM, durable)
        assert info.config.ack_wait == 10.0, durable
