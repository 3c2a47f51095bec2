"""The broker's dispatch loop on real NATS JetStream and PostgreSQL: an eval heard while the
loop awaits a publish is handed out at once, not after the loop's idle timeout."""

from __future__ import annotations

import asyncio
import time

from nats.js import JetStreamContext

from drover.broker.service import BrokerService
from drover.model import Evaluation
from drover.model.events import EvalsUpserted
from drover.runtime.bus import EVALS_STREAM, EVALS_SUBJECT
from drover.runtime.replica import BrokerReplica
from drover.runtime.store import EventStore


def pending(eid: str, job: str, idx: int) -> Evaluation:
    return Evaluation(
        id=eid, job_id=job, priority=50, create_index=idx, modify_index=idx, status="pending",
        create_time=time.time_ns(),
    )  # fmt: skip


async def test_an_eval_heard_during_a_publish_is_dispatched_at_once(
    store: EventStore, js_fresh: JetStreamContext
) -> None:
    svc = BrokerService(BrokerReplica(store, js_fresh), window=3)
    published: dict[str, float] = {}

    async def publish(evaluation: Evaluation) -> None:
        await js_fresh.publish(EVALS_SUBJECT, evaluation.model_dump_json(by_alias=True).encode())
        published[evaluation.id] = time.monotonic()
        if evaluation.id == "first":
            # The replica hears another job's eval while this publish is still being awaited.
            svc.on_event(2, EvalsUpserted(evals=[pending("second", "b", 2)]), {})

    async def cancel(evals: list[Evaluation]) -> None:
        raise AssertionError("nothing to cancel")

    stop = asyncio.Event()
    svc.on_event(1, EvalsUpserted(evals=[pending("first", "a", 1)]), {})
    task = asyncio.create_task(svc.dispatch(stop, publish, cancel))
    try:
        deadline = time.monotonic() + 3.0
        while "second" not in published and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        # The loop sleeps up to 1 s when nothing wakes it: a lost wake-up shows as that second.
        assert "second" in published and published["second"] - published["first"] < 0.5
        assert (await js_fresh.stream_info(EVALS_STREAM)).state.messages == 2
    finally:
        stop.set()
        svc.wake.set()
        await task
