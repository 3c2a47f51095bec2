"""The worker loop's delivery limit on real NATS JetStream: an eval whose scheduling fails at its
third delivery, and one handed out a fourth time, go to the failed queue (where the watcher
leader reaps them) instead of back to the workers."""

from __future__ import annotations

from nats.aio.msg import Msg
from nats.js import JetStreamContext

from drover.model import Evaluation
from drover.runtime.bus import EVALS_FAILED_SUBJECT, EVALS_STREAM, EVALS_SUBJECT, MSG_ID_HEADER
from drover.runtime.replica import Replica
from drover.runtime.store import EventStore
from drover.worker.loop import handle, subscribe
from drover.worker.worker import Worker


class FailingWorker(Worker):
    """Its scheduling fails every time, as a bug in the scheduler would make it."""

    def __init__(self, js: JetStreamContext, store: EventStore) -> None:
        super().__init__(js._nc, Replica(store, js))
        self.deliveries: list[int] = []

    async def process(self, ev: Evaluation, deliveries: int) -> None:
        self.deliveries.append(deliveries)
        raise RuntimeError("scheduling failed")


async def deliver(sub: JetStreamContext.PullSubscription) -> Msg:
    (msg,) = await sub.fetch(1, timeout=5)
    return msg


async def test_an_eval_goes_to_the_failed_queue_at_its_delivery_limit(
    store: EventStore, js_fresh: JetStreamContext
) -> None:
    js = js_fresh
    worker = FailingWorker(js, store)
    own, _ = await subscribe(js, "", ack_wait=30)
    failed = await js.pull_subscribe(EVALS_FAILED_SUBJECT, durable="reaper", stream=EVALS_STREAM)

    # Scheduling fails at the third delivery: no nack, the failed queue.
    ev = Evaluation(id="e1", job_id="web", modify_index=7)
    await js.publish(
        EVALS_SUBJECT, ev.model_dump_json(by_alias=True).encode(), headers={MSG_ID_HEADER: "e1:7"}
    )
    for _ in range(2):
        await (await deliver(own)).nak()  # two deliveries that failed before
    await handle(worker, await deliver(own), ack_wait=30)
    assert worker.deliveries == [3]
    moved = await deliver(failed)
    assert Evaluation.model_validate_json(moved.data).id == "e1"
    assert (moved.headers or {})[MSG_ID_HEADER] == "failed:e1:7"
    await moved.ack()

    # Handed out a fourth time (the workers holding it died): moved without being scheduled.
    ev2 = Evaluation(id="e2", job_id="api", modify_index=9)
    await js.publish(
        EVALS_SUBJECT, ev2.model_dump_json(by_alias=True).encode(), headers={MSG_ID_HEADER: "e2:9"}
    )
    for _ in range(3):
        await (await deliver(own)).nak()
    await handle(worker, await deliver(own), ack_wait=30)
    assert worker.deliveries == [3]
    assert Evaluation.model_validate_json((await deliver(failed)).data).id == "e2"

    # Both were acked on the workers' side: nothing comes back to them.
    info = await js.consumer_info(EVALS_STREAM, "workers")
    assert info.num_ack_pending == 0 and info.num_pending == 0
