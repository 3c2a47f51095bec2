"""`drover-worker`: pull ready evals from the EVALS work queue, schedule each on the in-memory
replica, submit the plan to the plan applier, refresh and retry on a partial commit; ack when
the eval's outcome is committed. Run as many as you like.

A worker of the large lane (DROVER_WORKER_LANE=large, which `drover up` gives one worker per
large eval the broker may hand out) takes large evals first and lowers its CPU priority (nice
DROVER_LARGE_LANE_NICE, 10), so on a busy machine scheduling 1,000 allocs gives way to what a
small job waits for; the small lane takes small evals first.

A large-lane worker works on DROVER_LARGE_LANE_DEPTH evals at once (2): while one's plan is
being committed it schedules the next, against its replica with the submitted plan's
placements added (`PendingPlacements`), so the next plan does not pick the nodes the first one
filled."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Awaitable

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig

from drover.model.evaluation import EVAL_STATUS_BLOCKED, Evaluation
from drover.runtime.bus import (
    EVALS_LARGE_SUBJECT,
    EVALS_STREAM,
    EVALS_SUBJECT,
    PLAN_SUBJECT,
    close,
    connect_streams,
)
from drover.runtime.replica import Replica
from drover.runtime.service import run_service
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore
from drover.runtime.telemetry import extract, inject, tracer
from drover.scheduler import schedule
from drover.scheduler.evalflow import (
    DELIVERY_LIMIT,
    delivery_limit_failure,
    max_attempts_failure,
    nack_delay,
    plan_attempts,
)
from drover.scheduler.lanes import LANE_LARGE
from drover.scheduler.plan import Plan
from drover.scheduler.planapply import PendingPlacements
from drover.scheduler.state import StateSnapshot
from drover.scheduler.wire import PlanRequest, PlanResponse, decode_response, encode_request

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
PLAN_TIMEOUT = 15.0


class Worker:
    def __init__(self, nc: Client, replica: Replica, depth: int = 1) -> None:
        self.nc = nc
        self.replica = replica
        self.rng = random.Random()
        # With more than one eval at a time: the plans submitted and not yet known to be in the
        # replica, by eval ID. The others are scheduled as if they were committed.
        self.depth = depth
        self.submitted: dict[str, Plan] = {}

    def state_for(self, eval_id: str) -> StateSnapshot:
        """The replica, with the placements of the other evals' plans in flight added."""
        state: StateSnapshot = self.replica.state
        for other, plan in self.submitted.items():
            if other != eval_id:
                state = PendingPlacements.of_plan(state, plan)
        return state

    async def submit_tracked(self, plan: Plan, evals: list[Evaluation]) -> PlanResponse:
        """`submit`, with the plan counted as made for the evals scheduled meanwhile until the
        replica has its commit (or it is known not to have been made)."""
        if self.depth <= 1 or not plan.node_allocation:
            return await self.submit(plan, evals)
        self.submitted[plan.eval_id] = plan
        try:
            resp = await self.submit(plan, evals)
            if resp.index and not resp.error:
                await self.replica.wait_for(resp.index)
            return resp
        finally:
            self.submitted.pop(plan.eval_id, None)

    async def submit(self, plan: Plan, evals: list[Evaluation]) -> PlanResponse:
        payload = encode_request(PlanRequest(plan=plan, evals=evals))
        for attempt in range(100):
            try:
                msg = await self.nc.request(PLAN_SUBJECT, payload, timeout=PLAN_TIMEOUT, headers=inject())
                return decode_response(msg.data)
            except NoRespondersError:
                # No plan applier right now (a failover is under way): wait for the standby.
                await asyncio.sleep(min(0.1 * (attempt + 1), 1.0))
            except NatsTimeout:
                # The applier may have died holding the request, or be busy: ask again. If the
                # first copy was committed meanwhile, this one is refused as stale (same job,
                # older snapshot) and the eval is found done on refresh.
                log.warning("plan for eval %s unanswered after %ss; resubmitting", plan.eval_id, PLAN_TIMEOUT)
        raise RuntimeError("no plan applier answered")

    async def process(self, ev: Evaluation, deliveries: int) -> None:
        t0 = time.perf_counter()
        await self.replica.wait_for(ev.modify_index)
        log.debug(
            "eval %s of %s: %.0f ms since it was created, %.0f ms waiting for the replica",
            ev.id,
            ev.job_id,
            (time.time_ns() - ev.create_time) / 1e6 if ev.create_time else -1,
            (time.perf_counter() - t0) * 1000,
        )
        current = self.replica.state.eval(ev.id)
        if current is None or current.terminal_status():
            return  # a redelivery of an eval already done with
        if deliveries > 1:
            # Redelivered: a worker died or nacked it, or it was not acked within the ack wait.
            log.info("eval %s of %s delivered again (delivery %d)", ev.id, ev.job_id, deliveries)
        now = time.time_ns()
        if deliveries > DELIVERY_LIMIT:
            await self.submit(
                Plan(eval_id=current.id, priority=current.priority, job=None),
                delivery_limit_failure(current, now, self.rng),
            )
            return
        limit = plan_attempts(current.type)
        attempts = 0
        while True:
            t0 = time.perf_counter()
            res = schedule(self.state_for(current.id), current, time.time_ns())
            t1 = time.perf_counter()
            evals = [res.eval, *res.create_evals]
            if res.blocked_eval is not None:
                evals.append(res.blocked_eval)
            if res.reblock:
                evals = [res.eval.model_copy(update={"status": EVAL_STATUS_BLOCKED}), *res.create_evals]
            resp = await self.submit_tracked(res.plan, evals)
            log.debug(
                "eval %s: scheduled in %.0f ms, plan answered in %.0f ms",
                current.id,
                (t1 - t0) * 1000,
                (time.perf_counter() - t1) * 1000,
            )
            if resp.error == "eval already processed":
                return
            if resp.error:
                raise RuntimeError(resp.error)
            if resp.full:
                return
            attempts = 0 if resp.placed else attempts + 1
            if attempts >= limit:
                log.warning(
                    "eval %s of %s: %d plans in a row placed nothing; failed, blocked until capacity "
                    "frees up or for a minute",
                    current.id,
                    current.job_id,
                    attempts,
                )
                fail = max_attempts_failure(current, attempts, time.time_ns(), self.rng)
                await self.submit(Plan(eval_id=current.id, priority=current.priority, job=None), fail)
                return
            await self.replica.wait_for(resp.index)


async def _fetch(sub: JetStreamContext.PullSubscription, wait: float) -> list[Msg]:
    """At most one eval from `sub`, waiting up to `wait` seconds for it."""
    try:
        return await sub.fetch(1, timeout=wait)
    except NatsTimeout:
        return []


async def _settle(op: Awaitable[None]) -> None:
    """Ack or nack; if NATS is away the eval is simply redelivered later."""
    try:
        await op
    except Exception as e:
        log.warning("could not settle an eval message: %s", e)


async def _keep_alive(msg: Msg, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        try:
            await msg.in_progress()
        except Exception:
            return


async def run(settings: Settings, stop: asyncio.Event) -> None:
    store = EventStore(settings.database_url)
    nc, js = await connect_streams(settings.nats_url, "worker")
    replica = Replica(store, js)
    await replica.start()
    depth = settings.large_lane_depth if settings.worker_lane == LANE_LARGE else 1
    worker = Worker(nc, replica, depth)
    if settings.worker_lane == LANE_LARGE and settings.large_lane_nice:
        os.nice(settings.large_lane_nice)
    config = ConsumerConfig(
        ack_policy=AckPolicy.EXPLICIT, ack_wait=settings.eval_ack_wait, max_ack_pending=-1
    )
    small = await js.pull_subscribe(EVALS_SUBJECT, durable=DURABLE, stream=EVALS_STREAM, config=config)
    large = await js.pull_subscribe(
        EVALS_LARGE_SUBJECT, durable=DURABLE_LARGE, stream=EVALS_STREAM, config=config
    )
    # Its own lane's evals first; the other lane's when it has none (an idle large-lane worker
    # helps with a burst of small jobs, and either lane keeps going if the other has no worker).
    own, other = (large, small) if settings.worker_lane == LANE_LARGE else (small, large)
    own_wait = LARGE_LANE_WAIT if settings.worker_lane == LANE_LARGE else SMALL_LANE_WAIT

    async def handle(msg: Msg) -> None:
        deliveries = msg.metadata.num_delivered if msg.metadata else 1
        # Tell JetStream we are still on it, so a long eval is not redelivered meanwhile.
        beat = asyncio.create_task(_keep_alive(msg, settings.eval_ack_wait / 3))
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
            log.exception("eval failed; nack")
            await _settle(msg.nak(delay=nack_delay(deliveries)))

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
            msgs: list[Msg] = await _fetch(own, own_wait) or await _fetch(other, OTHER_LANE_WAIT)
        except Exception as e:
            log.warning("fetch: %s", e)
            await asyncio.sleep(0.5)
            continue
        if not msgs:
            continue
        if not busy:
            log.debug("idle %.0f ms before the next eval", (time.perf_counter() - idle_since) * 1000)
        for msg in msgs:
            task = asyncio.create_task(handle(msg))
            busy.add(task)
            task.add_done_callback(finished)
    if busy:
        await asyncio.wait(busy)
    await close(nc)
    store.close()


def main() -> None:
    run_service("worker", run)


if __name__ == "__main__":
    main()
