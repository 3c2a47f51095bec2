"""The worker: schedule an eval on the in-memory replica, submit the plan to the plan applier,
refresh and retry on a partial commit, until the eval's outcome is committed.

A worker of the large lane works on DROVER_LARGE_LANE_DEPTH evals at once (2): while one's plan
is being committed it schedules the next, against its replica with the submitted plan's
placements added (`PendingPlacements`), so the next plan does not pick the nodes the first one
filled."""

from __future__ import annotations

import asyncio
import logging
import random
import time

from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from drover.model.evaluation import EVAL_STATUS_BLOCKED, Evaluation
from drover.runtime.bus import PLAN_SUBJECT
from drover.runtime.replica import Replica
from drover.runtime.store.queries import Reads
from drover.runtime.telemetry import inject
from drover.scheduler import schedule
from drover.scheduler.evalflow import max_attempts_failure, plan_attempts
from drover.scheduler.plan import Plan
from drover.scheduler.planapply import PendingPlacements
from drover.scheduler.state import StateSnapshot
from drover.scheduler.wire import PlanRequest, PlanResponse, decode_response, encode_request
from drover.worker.scores import reconnect_scores

log = logging.getLogger("drover.worker")
PLAN_TIMEOUT = 15.0


class Worker:
    """Schedules evals on `replica` and submits their plans; `depth` evals at a time (the loop,
    drover.worker.loop, hands them out)."""

    def __init__(self, nc: Client, replica: Replica, depth: int = 1, attempts: int | None = None) -> None:
        self.nc = nc
        self.replica = replica
        # Plans per eval before it fails (None: Nomad's per scheduler type).
        self.attempts = attempts
        self.rng = random.Random()
        # With more than one eval at a time: the plans submitted and not yet known to be in the
        # replica, by eval ID. The others are scheduled as if they were committed.
        self.depth = depth
        self.submitted: dict[str, Plan] = {}
        self.reads = Reads(replica.store)

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
        """Submit the plan (with the evals to write if it commits in full) and wait for its answer."""
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

    async def process(self, evaluation: Evaluation, deliveries: int) -> None:
        """Schedule `evaluation` (handed out for the `deliveries`th time) until its outcome is committed."""
        t0 = time.perf_counter()
        await self.replica.wait_for(evaluation.modify_index)
        log.debug(
            "eval %s of %s: %.0f ms since it was created, %.0f ms waiting for the replica",
            evaluation.id,
            evaluation.job_id,
            (time.time_ns() - evaluation.create_time) / 1e6 if evaluation.create_time else -1,
            (time.perf_counter() - t0) * 1000,
        )
        current = self.replica.state.eval(evaluation.id)
        if current is None or current.terminal_status():
            return  # a redelivery of an eval already done with
        if deliveries > 1:
            # Redelivered: a worker died or nacked it, or it was not acked within the ack wait.
            log.info(
                "eval %s of %s delivered again (delivery %d)", evaluation.id, evaluation.job_id, deliveries
            )
        limit = self.attempts or plan_attempts(current.type)
        attempts = 0
        while True:
            t0 = time.perf_counter()
            state = self.state_for(current.id)
            scores = await reconnect_scores(state, current, self.reads.allocs_by_id)
            res = schedule(state, current, time.time_ns(), placement_scores=scores)
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
