"""The plan applier service on real NATS and PostgreSQL: while a large plan that only adds commits
in the background, a small plan of another job is verified against the state with the large
plan's placements added, answered and committed first - and the log shows no node
over-committed at any index."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from drover.common import Evaluation, Job
from drover.common.bus import PLAN_SUBJECT, connect
from drover.common.canonicalize import canonicalize
from drover.common.events import EvalsUpserted, JobRegistered, NodeRegistered, PlanApplied
from drover.common.relay import Relay
from drover.common.settings import Settings
from drover.common.store import EventStore, libpq_url
from drover.planner import __main__ as planner
from drover.scheduler import schedule
from drover.scheduler.plan import Plan
from drover.scheduler.wire import PlanRequest, decode_response, encode_request

from .invariants import check_log
from .test_eventstore import node

NOW = 1_700_000_000_000_000_000
# A big commit held back this long: long enough that the small plan surely arrives meanwhile.
BIG_COMMIT_DELAY = 1.5


def job(job_id: str, count: int) -> Job:
    j = Job.model_validate(
        {
            "ID": job_id,
            "Datacenters": ["dc1"],
            "TaskGroups": [
                {
                    "Name": "g",
                    "Count": count,
                    "Tasks": [{"Name": "t", "Driver": "mock", "Resources": {"CPU": 800, "MemoryMB": 64}}],
                }
            ],
        }
    )
    return canonicalize(j)


async def test_a_small_plan_overtakes_a_large_commit_and_no_node_is_over_committed(
    store: EventStore,
    database_url: str,
    nats_url: str,
    js_fresh: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Nodes of five 800-MHz slots. The large plan (100 allocs) is computed first; a spare node
    # joins; the small plan puts five allocs on a node the large plan uses (they cannot fit
    # both) and five on the spare (they fit).
    store.append([NodeRegistered(node=node(i)) for i in range(25)])
    big, small = job("big", 100), job("small", 10)
    evals = [
        Evaluation(id=f"e-{j.id}", job_id=j.id, type="service", triggered_by="job-register")
        for j in (big, small)
    ]
    store.append([JobRegistered(job=big), JobRegistered(job=small), EvalsUpserted(evals=evals)])
    big_res = schedule(store.replay(), evals[0], NOW)
    store.append([NodeRegistered(node=node(99))])
    small_res = schedule(store.replay(), evals[1], NOW)
    taken = next(iter(big_res.plan.node_allocation))
    allocs = [a for v in small_res.plan.node_allocation.values() for a in v]
    small_res.plan.node_allocation = {
        n: [a.model_copy(update={"node_id": n, "node_name": n}) for a in part]
        for n, part in ((taken, allocs[:5]), ("n99", allocs[5:]))
    }
    results = [big_res, small_res]

    # Hold the large commit back (in its thread, before it appends) so that it is surely still
    # in flight when the small plan arrives.
    append = EventStore.append

    def slow_append(self: EventStore, events: Any, **kw: Any) -> Any:
        if sum(len(e.event.allocs) for e in events if isinstance(e.event, PlanApplied)) >= 100:
            time.sleep(BIG_COMMIT_DELAY)
        return append(self, events, **kw)

    monkeypatch.setattr(EventStore, "append", slow_append)
    stop = asyncio.Event()
    relay = asyncio.create_task(Relay(store, js_fresh, libpq_url(database_url)).run(stop))
    service = asyncio.create_task(planner.run(Settings(database_url=database_url, nats_url=nats_url), stop))
    nc = await connect(nats_url, "test")
    try:
        # Wait for the planner to lead and subscribe (an empty plan gets an answer).
        empty = encode_request(PlanRequest(plan=Plan(eval_id="ready", priority=50, job=None)))
        deadline = time.monotonic() + 30
        while True:
            try:
                await nc.request(PLAN_SUBJECT, empty, timeout=1)
                break
            except Exception:
                assert time.monotonic() < deadline, "no plan applier answered"
                await asyncio.sleep(0.1)

        def request(i: int) -> Any:
            r = results[i]
            payload = encode_request(PlanRequest(plan=r.plan, evals=[r.eval]))
            return asyncio.create_task(nc.request(PLAN_SUBJECT, payload, timeout=20))

        big_answer = request(0)
        await asyncio.sleep(0.3)  # the large plan is verified and committing
        small_answer = await request(1)
        assert not big_answer.done(), "the small plan was answered only after the large commit"
        small_resp = decode_response(small_answer.data)
        big_resp = decode_response((await big_answer).data)
    finally:
        stop.set()
        await asyncio.gather(service, relay)
        await nc.close()

    assert not small_resp.error and not big_resp.error
    assert big_resp.full and big_resp.placed == 100
    # Verified against the large plan's placements, not yet committed: the node it shares
    # with the large plan is refused.
    assert small_resp.rejected_nodes == [taken] and small_resp.placed == 5
    assert small_resp.index < big_resp.index  # and it committed first
    state = check_log(store)  # no node over-committed at any index, no alloc created twice
    assert sum(1 for a in state.allocs.values() if not a.terminal_status()) == 105
