"""The plan applier service on real NATS and PostgreSQL: while a large plan that only adds commits
in the background, a small plan of another job is verified against the state with the large
plan's placements added and committed first - and the log shows no node over-committed at any
index. One refused nodes meanwhile is answered after the large plan, with its index, so that a
worker does not schedule the same refused nodes from the same state again. A planner whose lease
a newer one took over steps down at its first commit and commits nothing."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from drover.model import Evaluation, Job
from drover.model.canonicalize import canonicalize
from drover.model.events import EvalsUpserted, JobRegistered, NodeRegistered, PlanApplied
from drover.planner import service as planner
from drover.planner.applier import LEASE
from drover.runtime.bus import PLAN_SUBJECT, connect
from drover.runtime.relay import Relay
from drover.runtime.replica import Replica
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, libpq_url
from drover.scheduler import schedule
from drover.scheduler.plan import Plan
from drover.scheduler.wire import PlanRequest, PlanResponse, decode_response, encode_request
from drover.worker.worker import Worker

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


def hold_back_large_appends(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hold each append of 100 allocs or more back BIG_COMMIT_DELAY (in its thread, before it
    appends), so that a large commit is surely still in flight when the next plan arrives."""
    append = EventStore.append

    def slow_append(self: EventStore, events: Any, **kw: Any) -> Any:
        if sum(len(e.event.allocs) for e in events if isinstance(e.event, PlanApplied)) >= 100:
            time.sleep(BIG_COMMIT_DELAY)
        return append(self, events, **kw)

    monkeypatch.setattr(EventStore, "append", slow_append)


def with_jobs(store: EventStore, nodes: int, *jobs: Job) -> list[Evaluation]:
    """`nodes` nodes of five 800-MHz slots, and `jobs` registered, each with a pending eval."""
    store.append([NodeRegistered(node=node(i)) for i in range(nodes)])
    evals = [
        Evaluation(id=f"e-{j.id}", job_id=j.id, type="service", triggered_by="job-register") for j in jobs
    ]
    store.append([*(JobRegistered(job=j) for j in jobs), EvalsUpserted(evals=evals)])
    return evals


async def recording_worker(
    store: EventStore, nc: Any, depth: int = 1
) -> tuple[Worker, list[tuple[Plan, PlanResponse]]]:
    """A worker on a replica of its own, recording every plan it submits with its answer."""
    replica = Replica(store, nc.jetstream())
    await replica.start()
    worker = Worker(nc, replica, depth)
    calls: list[tuple[Plan, PlanResponse]] = []
    submit = worker.submit

    async def recorded(plan: Plan, evs: list[Evaluation]) -> PlanResponse:
        resp = await submit(plan, evs)
        calls.append((plan, resp))
        return resp

    worker.submit = recorded  # type: ignore[method-assign]
    return worker, calls


@contextlib.asynccontextmanager
async def plan_applier(
    store: EventStore, database_url: str, nats_url: str, js: Any
) -> AsyncIterator[tuple[Any, Callable[[Any], Any]]]:
    """The planner service and the relay, until the block ends; yields the NATS connection and
    a function that submits a scheduling result's plan as a worker does (a pending answer)."""
    stop = asyncio.Event()
    relay = asyncio.create_task(Relay(store, js, libpq_url(database_url)).run(stop))
    service = asyncio.create_task(planner.run(Settings(database_url=database_url, nats_url=nats_url), stop))
    nc = await connect(nats_url, "test", Settings().nats_credentials())
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

        def request(res: Any) -> Any:
            payload = encode_request(PlanRequest(plan=res.plan, evals=[res.eval]))
            return asyncio.create_task(nc.request(PLAN_SUBJECT, payload, timeout=20))

        yield nc, request
    finally:
        stop.set()
        await asyncio.gather(service, relay)
        await nc.close()


async def test_a_small_plan_overtakes_a_large_commit_and_no_node_is_over_committed(
    store: EventStore,
    database_url: str,
    nats_url: str,
    js_fresh: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Nodes of five 800-MHz slots. The large plan (100 allocs) is computed first; two spare
    # nodes join. The small plan puts five allocs on a node the large plan uses (they cannot
    # fit both) and five on a spare (they fit); the free plan puts five on the other spare.
    store.append([NodeRegistered(node=node(i)) for i in range(25)])
    big, small, free = job("big", 100), job("small", 10), job("free", 5)
    evals = [
        Evaluation(id=f"e-{j.id}", job_id=j.id, type="service", triggered_by="job-register")
        for j in (big, small, free)
    ]
    store.append([*(JobRegistered(job=j) for j in (big, small, free)), EvalsUpserted(evals=evals)])
    big_res = schedule(store.replay(), evals[0], NOW)
    store.append([NodeRegistered(node=node(98)), NodeRegistered(node=node(99))])
    small_res = schedule(store.replay(), evals[1], NOW)
    free_res = schedule(store.replay(), evals[2], NOW)
    taken = next(iter(big_res.plan.node_allocation))
    allocs = [a for v in small_res.plan.node_allocation.values() for a in v]
    small_res.plan.node_allocation = {
        n: [a.model_copy(update={"node_id": n, "node_name": n}) for a in part]
        for n, part in ((taken, allocs[:5]), ("n99", allocs[5:]))
    }
    free_allocs = [a for v in free_res.plan.node_allocation.values() for a in v]
    free_res.plan.node_allocation = {
        "n98": [a.model_copy(update={"node_id": "n98", "node_name": "n98"}) for a in free_allocs]
    }
    hold_back_large_appends(monkeypatch)
    async with plan_applier(store, database_url, nats_url, js_fresh) as (_, request):
        big_answer = request(big_res)
        await asyncio.sleep(0.3)  # the large plan is verified and committing
        free_resp = decode_response((await request(free_res)).data)
        assert not big_answer.done(), "the free plan was answered only after the large commit"
        small_answer = request(small_res)
        big_resp = decode_response((await big_answer).data)
        small_resp = decode_response((await small_answer).data)

    assert not small_resp.error and not big_resp.error and not free_resp.error
    assert big_resp.full and big_resp.placed == 100
    assert free_resp.full and free_resp.placed == 5 and free_resp.index < big_resp.index
    # Verified against the large plan's placements, not yet committed: the node it shares
    # with the large plan is refused.
    assert small_resp.rejected_nodes == [taken] and small_resp.placed == 5
    commits = {r.event.job_id: r.position for r in store.iter_all() if isinstance(r.event, PlanApplied)}
    assert commits["small"] < commits["big"]  # it committed first
    # But its worker is told to refresh to a state with the large plan in it: from the state it
    # had, it would pick the refused node again (and again, until it gave up for a minute).
    assert small_resp.index >= big_resp.index
    state = check_log(store)  # no node over-committed at any index, no alloc created twice
    assert sum(1 for a in state.allocs.values() if not a.terminal_status()) == 110


async def test_a_worker_refused_for_a_background_plan_s_placements_retries_after_it(
    store: EventStore,
    database_url: str,
    nats_url: str,
    js_fresh: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Twenty nodes of five 800-MHz slots, which the large plan (100 allocs) fills. While it
    # commits, a worker schedules a count-5 job from a state without it: the nodes it picks
    # are refused. Told at once to refresh to that same state, it would pick them again and
    # again, and fail the eval after five refusals within the one commit (blocked for a minute:
    # max plan attempts). Answered after the commit, it refreshes once, finds the cluster full
    # and blocks the eval as any job that does not fit.
    evals = with_jobs(store, 20, job("big", 100), job("small", 5))
    big_res = schedule(store.replay(), evals[0], NOW)
    assert {n: len(v) for n, v in big_res.plan.node_allocation.items()} == {f"n{i}": 5 for i in range(20)}
    hold_back_large_appends(monkeypatch)
    async with plan_applier(store, database_url, nats_url, js_fresh) as (nc, request):
        worker, calls = await recording_worker(store, nc)
        big_answer = request(big_res)
        await asyncio.sleep(0.3)  # the large plan is verified and committing
        evaluation = worker.replica.state.eval("e-small")
        assert evaluation is not None
        await worker.process(evaluation, 1)
        big_resp = decode_response((await big_answer).data)

    assert big_resp.full and big_resp.placed == 100
    submitted = [sum(len(v) for v in plan.node_allocation.values()) for plan, _ in calls]
    assert submitted == [5, 0]  # refused once; then nothing to place
    state = check_log(store)
    done = state.eval("e-small")
    assert done is not None and done.status == "complete"
    blocked = [e for e in state.evals.values() if e.job_id == "small" and e.status == "blocked"]
    assert len(blocked) == 1 and blocked[0].triggered_by != "max-plan-attempts"


@pytest.mark.parametrize("depth", [2, 1], ids=["counting the plan in flight", "not counting it"])
async def test_a_worker_scheduling_while_its_previous_plan_commits_counts_that_plan(
    store: EventStore,
    database_url: str,
    nats_url: str,
    js_fresh: Any,
    monkeypatch: pytest.MonkeyPatch,
    depth: int,
) -> None:
    # Forty nodes of five slots; two jobs of 100 allocs, room for both. A worker of depth 2 (the
    # large lane's DROVER_LARGE_LANE_DEPTH) schedules the second while the first plan is still
    # committing, with that plan's placements counted: both plans commit whole at the first
    # submission. Not counting them, the second picks nodes the first filled and is refused.
    evals = with_jobs(store, 40, job("first", 100), job("second", 100))
    hold_back_large_appends(monkeypatch)
    async with plan_applier(store, database_url, nats_url, js_fresh) as (nc, _):
        worker, calls = await recording_worker(store, nc, depth)
        evs = [worker.replica.state.eval(e.id) for e in evals]
        assert all(e is not None for e in evs)
        await asyncio.gather(*(worker.process(e, 1) for e in evs if e is not None))

    answers = [(plan.eval_id, resp.placed, resp.full) for plan, resp in calls]
    state = check_log(store)  # no node over-committed at any index, no alloc twice
    assert sum(1 for a in state.allocs.values() if not a.terminal_status()) == 200
    if depth == 2:
        assert sorted(answers) == [("e-first", 100, True), ("e-second", 100, True)]
        assert not worker.submitted  # each plan dropped once the replica had it
    else:
        assert ("e-second", 100, True) not in answers and len(answers) > 2  # refused, then retried


@pytest.mark.parametrize("count", [5, 100])  # committed in turn, or in the background
async def test_a_fenced_planner_steps_down_and_commits_nothing(
    store: EventStore,
    database_url: str,
    nats_url: str,
    js_fresh: Any,
    caplog: pytest.LogCaptureFixture,
    count: int,
) -> None:
    """A newer planner took the lease over: this one's commit is fenced, it stops serving (its
    `run` returns), commits nothing and answers nothing (the worker asks the new leader)."""
    evals = with_jobs(store, 20, job("web", count))
    res = schedule(store.replay(), evals[0], NOW)
    async with plan_applier(store, database_url, nats_url, js_fresh) as (_, request):
        await asyncio.to_thread(store.acquire_lease, LEASE, "newer")
        before = store.last_position()
        answer = request(res)
        async with asyncio.timeout(10):
            while "stepping down" not in caplog.text:
                await asyncio.sleep(0.05)
        assert not answer.done()
        answer.cancel()
    assert store.last_position() == before
    assert not any(isinstance(r.event, PlanApplied) for r in store.iter_all())
