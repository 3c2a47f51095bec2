"""`drover-broker`: the eval broker. It follows every eval in the log on its replica (fed by
the EVENTS stream, which `drover-relay` fills), applies the broker's rules
(drover.scheduler.broker) and publishes ready evals to the EVALS work queue; cancellations are
written to the log. Its queue is rebuilt from the log when it restarts."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from drover.model.durations import SECOND
from drover.model.evaluation import Evaluation
from drover.model.events import EvalsUpserted, Event, SchedulerConfigUpdated
from drover.runtime.bus import (
    EVALS_LARGE_SUBJECT,
    EVALS_SUBJECT,
    MSG_ID_HEADER,
    close,
    connect_streams,
)
from drover.runtime.metrics import Metrics, follow_replica, published
from drover.runtime.replica import BrokerReplica
from drover.runtime.service import run_service
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore
from drover.runtime.telemetry import extract, inject, tracer
from drover.scheduler.broker import EvalBroker, eval_cost, unblocked_classes
from drover.scheduler.lanes import broker_limits, worker_lanes

log = logging.getLogger("drover.broker")
_tracer = tracer("drover.broker")


class BrokerService:
    """The broker's rules (`EvalBroker`) fed from the broker's replica: every eval it hears of,
    with its cost, and every capacity signal."""

    def __init__(
        self,
        replica: BrokerReplica,
        window: int | None = None,
        large: int | None = None,
        large_beside_small: int | None = None,
        small_quiet: int = 0,
    ) -> None:
        self.replica = replica
        self.broker = EvalBroker(window, large, large_beside_small, small_quiet)
        self.wake = asyncio.Event()
        # Trace context of the event that last wrote each eval, passed on to the worker.
        self.trace_of: dict[str, dict[str, Any]] = {}

    def cost(self, evaluation: Evaluation) -> int:
        """How many placements the eval's job asks for (`eval_cost`)."""
        state = self.replica.state
        return eval_cost(
            state.job(evaluation.namespace, evaluation.job_id),
            state.live_allocs(evaluation.namespace, evaluation.job_id),
            len(state.nodes),
        )

    def seed(self) -> None:
        """Queue every eval of the replica not yet done (after a start or restart)."""
        self.follow_config()
        now = time.time_ns()
        for evaluation in sorted(self.replica.state.evals.values(), key=lambda e: e.create_index):
            if not evaluation.terminal_status():
                self.broker.upsert(evaluation, now, self.cost(evaluation))

    def on_event(self, position: int, event: Event, meta: dict[str, Any]) -> None:
        """The replica applied `event` at `position`: take in its evals or capacity signals."""
        if isinstance(event, SchedulerConfigUpdated):
            self.follow_config()
        now = time.time_ns()
        state = self.replica.state
        carried = event.evals_made()
        if carried:
            for evaluation in carried:
                if "traceparent" in meta:
                    self.trace_of[evaluation.id] = meta
                elif evaluation.terminal_status():
                    self.trace_of.pop(evaluation.id, None)
                cur = state.eval(evaluation.id) or evaluation
                if cur.status == "pending" and cur.create_time and log.isEnabledFor(logging.DEBUG):
                    log.debug("eval %s of %s heard at %d, %.0f ms after it was created", cur.id, cur.job_id,
                              position, (now - cur.create_time) / 1e6)  # fmt: skip
                self.broker.upsert(cur, now, self.cost(cur) if not cur.terminal_status() else 1)
        else:
            for node_class in unblocked_classes(state, event):
                self.broker.unblock(node_class, position)
        self.wake.set()

    def follow_config(self) -> None:
        """Pause or unpause as the scheduler configuration says (Nomad's PauseEvalBroker)."""
        paused = self.replica.state.scheduler_config().pause_eval_broker
        if paused != self.broker.paused:
            log.info("eval broker %s by the scheduler configuration", "paused" if paused else "unpaused")
            self.broker.paused = paused

    async def dispatch(
        self,
        stop: asyncio.Event,
        publish: Callable[[Evaluation], Awaitable[None]],
        cancel: Callable[[list[Evaluation]], Awaitable[None]],
    ) -> None:
        """Hand out what is due (`publish`) and write cancellations (`cancel`) until `stop`,
        waking on every event heard and on the next delayed eval's time."""
        # Work handed out but not yet published/written: kept until it is, so a NATS or
        # Postgres outage delays it but never drops it.
        to_publish: list[Evaluation] = []
        to_cancel: list[Evaluation] = []
        while not stop.is_set():
            # Cleared before looking, not after: an eval heard while this pass awaits its
            # publishes must wake the next pass (clearing after them dropped that wake-up, and
            # the eval waited for the next event or the timeout: 110-250 ms under load).
            self.wake.clear()
            out = self.broker.due(time.time_ns())
            to_cancel.extend(out.cancel)
            to_publish.extend(out.dispatch)
            for evaluation in out.dispatch if log.isEnabledFor(logging.DEBUG) else ():
                log.debug(
                    "dispatch eval %s of %s, created %.0f ms ago (%d large out)",
                    evaluation.id,
                    evaluation.job_id,
                    (time.time_ns() - evaluation.create_time) / 1e6 if evaluation.create_time else -1,
                    sum(1 for e in self.broker.inflight.values() if self.broker.is_large(e)),
                )
            try:
                if to_cancel:
                    await cancel(to_cancel)
                    to_cancel = []
                while to_publish:
                    await publish(to_publish[0])
                    to_publish.pop(0)
            except Exception as e:
                log.warning("broker: %s; retrying", e)
                await asyncio.sleep(0.5)
                continue
            nxt = self.broker.next_wakeup()
            timeout = 1.0 if nxt is None else max(0.0, min(1.0, (nxt - time.time_ns()) / 1e9))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), timeout)


async def run(settings: Settings, stop: asyncio.Event) -> None:
    """The broker until `stop`: its replica, the rules fed from it, and the dispatch loop publishing to EVALS."""
    store = EventStore(settings.database())
    nc, js = await connect_streams(settings.nats_url, "broker", settings.nats_credentials())
    # Of allocs, the broker keeps only what it reads (drover.model.brokerstate).
    replica = BrokerReplica(store, js)
    # One eval per worker at a time (large-lane workers take `large_lane_depth`): what is not
    # yet handed out can still be reordered.
    window, large, beside_small = broker_limits(
        max(1, settings.workers), settings.large_evals, settings.large_lane_depth
    )
    svc = BrokerService(
        replica,
        window=window,
        large=large,
        large_beside_small=beside_small,
        small_quiet=int(settings.large_lane_quiet * SECOND),
    )
    # With worker lanes, large evals have a subject of their own (drover.scheduler.lanes).
    lanes = any(worker_lanes(max(1, settings.workers), settings.large_evals))
    replica.listeners.append(svc.on_event)
    await replica.start()
    svc.seed()

    async def publish(evaluation: Evaluation) -> None:
        parent = extract(svc.trace_of.get(evaluation.id))
        with _tracer.start_as_current_span(
            "broker.dispatch", context=parent, attributes={"eval.id": evaluation.id}
        ):
            await js.publish(
                EVALS_LARGE_SUBJECT if lanes and svc.broker.is_large(evaluation.id) else EVALS_SUBJECT,
                evaluation.model_dump_json(by_alias=True).encode(),
                headers=inject({MSG_ID_HEADER: f"{evaluation.id}:{evaluation.modify_index}"}),
            )

    async def cancel(evals: list[Evaluation]) -> None:
        await asyncio.to_thread(store.append, [EvalsUpserted(evals=evals)])

    metrics = Metrics("broker")
    follow_replica(metrics, replica)

    def depths(f: Metrics) -> None:
        for (lane, state), n in svc.broker.depths().items():
            f.gauge("broker.queue", n, lane=lane, state=state)

    metrics.collectors.append(depths)
    try:
        async with published(metrics, js, stop):
            await svc.dispatch(stop, publish, cancel)
    finally:
        stop.set()
        await close(nc)
        store.close()


def main() -> None:
    """`drover-broker`."""
    run_service("broker", run)
