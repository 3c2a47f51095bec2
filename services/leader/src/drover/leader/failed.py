"""The failed-eval reaper (Nomad's reapFailedEvaluations): an eval that reached its delivery
limit waits in the failed queue (`drover.evals.failed`, where the worker that saw the limit
passed moved it); the leader marks it failed and creates its failed-follow-up eval, delayed by
the server's baseline plus a random share of its range, in one fenced append
(drover.scheduler.evalflow.delivery_limit_failure). The queue is durable: what arrives while no
leader leads is reaped by the next one."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig

from drover.model.durations import SECOND
from drover.model.evaluation import Evaluation
from drover.model.events import EvalsUpserted
from drover.runtime.bus import EVALS_FAILED_SUBJECT, EVALS_STREAM
from drover.runtime.leader import Leader
from drover.runtime.replica import Replica
from drover.runtime.settings import Settings
from drover.runtime.store import NewEvent
from drover.scheduler.evalflow import delivery_limit_failure

log = logging.getLogger("drover.leader")
REAPER = "reaper"
BATCH = 16


class FailedEvalReaper:
    """Reaps the failed queue's evals on the leader's replica, appending under its lease."""

    def __init__(self, settings: Settings, replica: Replica, leader: Leader) -> None:
        self.replica = replica
        self.leader = leader
        self.baseline = int(settings.eval_failed_followup_baseline_delay * SECOND)
        self.spread = int(settings.eval_failed_followup_delay_range * SECOND)
        self.rng = random.Random()

    def outcome(self, eval_: Evaluation, now: int) -> list[Evaluation]:
        """The evals to write for `eval_` as the replica has it: none if it is done with (a copy
        moved twice, or an eval that finished meanwhile), else failed with its follow-up.
        (Only a copy the broker published again after a restart can be worked on between this
        read and the append; should it finish there, it reads failed and its follow-up finds
        nothing to do.)"""
        current = self.replica.state.eval(eval_.id)
        if current is None or current.terminal_status():
            return []
        job = self.replica.state.job(current.namespace, current.job_id)
        return delivery_limit_failure(
            current, now, self.rng, job_exists=job is not None, baseline=self.baseline, spread=self.spread
        )

    async def reap(self, msg: Msg) -> None:
        """One message of the failed queue: acked once its outcome is in the log."""
        eval_ = Evaluation.model_validate_json(msg.data)
        await self.replica.wait_for(eval_.modify_index)
        evals = self.outcome(eval_, time.time_ns())
        if evals:
            recorded = await self.leader.try_append(
                [NewEvent(EvalsUpserted(evals=evals))], "failed eval reaper"
            )
            if recorded is None:
                await msg.nak(delay=1.0)
                return
            follow = evals[1] if len(evals) > 1 else None
            log.warning(
                "eval %s of %s reached its delivery limit: failed; %s",
                eval_.id,
                eval_.job_id,
                f"follow-up {follow.id} in {follow.wait / SECOND:.1f} s" if follow else "no follow-up",
            )
        await msg.ack()


async def reap_failed_evals(
    settings: Settings, replica: Replica, js: JetStreamContext, leader: Leader
) -> None:
    """Reap the failed queue until `leader.stop`."""
    reaper = FailedEvalReaper(settings, replica, leader)
    config = ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=30.0)
    sub: JetStreamContext.PullSubscription | None = None
    while not leader.stop.is_set():
        try:
            if sub is None:
                sub = await js.pull_subscribe(
                    EVALS_FAILED_SUBJECT, durable=REAPER, stream=EVALS_STREAM, config=config
                )
            msgs = await sub.fetch(BATCH, timeout=1.0)
        except TimeoutError:
            # nats-py's, and the bare one its batch fetch raises when the deadline passes
            # while it waits on its no-wait probe (a loaded host): nothing to reap either way.
            continue
        except Exception as e:
            log.warning("failed queue: %s", e)
            await asyncio.sleep(0.5)
            continue
        for msg in msgs:
            try:
                await reaper.reap(msg)
            except Exception:
                log.exception("reaping a failed eval; it is delivered again")
                with contextlib.suppress(Exception):
                    await msg.nak(delay=1.0)
