"""Plans between workers and the plan applier: a plan arrives exactly as it was sent, its
placements in columns when there are many, grouped by node in the order they were sent."""

from __future__ import annotations

import json

import pytest

from drover.model.events import JobRegistered, NodeRegistered
from drover.model.placements import COLUMNS_FROM
from drover.model.reducer import apply
from drover.scheduler import schedule
from drover.scheduler.planapply import evaluate_plan, plan_applied_event
from drover.scheduler.state import InMemoryState
from drover.scheduler.wire import PlanRequest, decode_request, encode_request, unpack, with_metrics

from .conftest import make_eval, make_job, make_node

NOW = 1_700_000_000_000_000_000


@pytest.mark.parametrize(
    ("first", "then"),
    [(COLUMNS_FROM - 1, COLUMNS_FROM - 3), (40, 25), (40, 60), (5, 40)],
    ids=["few", "scale down", "scale up", "many from few"],
)
def test_a_plan_arrives_as_it_was_sent(first: int, then: int) -> None:
    state = InMemoryState()
    log = [NodeRegistered(node=make_node(f"n{i}", cpu=8000, mem=16_384)) for i in range(9)]
    log.append(JobRegistered(job=make_job("web", count=first, cpu=100, mem=64)))
    for i, event in enumerate(log, start=1):
        apply(state, i, event)
    res = schedule(state, make_eval(make_job("web", count=first)), NOW)
    apply(state, len(log) + 1, plan_applied_event(evaluate_plan(state, res.plan), NOW))
    job = make_job("web", count=then, cpu=100, mem=64).model_copy(update={"version": 1})
    apply(state, len(log) + 2, JobRegistered(job=job))
    res = schedule(state, make_eval(job), NOW)
    plan = res.plan
    # the new version's allocs: those kept are updated in place, the rest placed or stopped
    stops = sum(map(len, plan.node_update.values()))
    assert (len(plan.placements()), stops) == (then, max(0, first - then))
    assert sum(a.create_index > 0 for a in plan.placements()) == min(first, then)

    sent = PlanRequest(plan=plan, evals=[res.eval])
    wire = encode_request(sent)
    assert json.loads(unpack(wire)).keys() == (
        {"request", "placements"} if len(plan.placements()) >= COLUMNS_FROM else {"plan", "evals"}
    )
    got = decode_request(wire)
    if len(plan.placements()) >= COLUMNS_FROM:
        # In columns, every alloc's metrics come as JSON, passed on undecoded.
        measured = [a for a in plan.placements() if a.metrics is not None]
        assert measured and set(got.metrics_json) == {a.id for a in measured}
        assert all(a.metrics is None for a in got.plan.placements())
        got = with_metrics(got)
    assert got == sent
    assert list(got.plan.node_allocation) == list(plan.node_allocation)
    assert [a.metrics for a in got.plan.placements()] == [a.metrics for a in plan.placements()]
