"""The optimistic state the plan applier verifies the next plan against while the previous one
commits: it must answer exactly as the state would once the pending plan is applied - node usage,
allocs, stale plans, finished evals - whether or not the base has meanwhile taken in that plan.

Reference: Nomad's nomad/plan_apply.go (planApply: "optimistically apply" the plan being
committed to a snapshot, and evaluate the next plan against it).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from drover.common import Job
from drover.common.events import EvalsUpserted, Event, JobRegistered, NodeRegistered
from drover.common.reducer import apply
from drover.scheduler import schedule
from drover.scheduler.plan import PlanResult
from drover.scheduler.planapply import OptimisticState, evaluate_plan, plan_applied_event
from drover.scheduler.state import InMemoryState

from .conftest import make_eval, make_job, make_node

NOW = 1_700_000_000_000_000_000


def replayed(log: list[Event]) -> InMemoryState:
    state = InMemoryState()
    for i, ev in enumerate(log, start=1):
        apply(state, i, ev)
    return state


def commit(log: list[Event], job: Job) -> None:
    """Schedule `job` (registered) on the state `log` describes and append what commits."""
    state = replayed(log)
    ev = make_eval(job)
    res = schedule(state, ev, NOW)
    log.append(plan_applied_event(evaluate_plan(state, res.plan), NOW))
    log.append(EvalsUpserted(evals=[res.eval]))


def base_log(nodes: int, cpu: int) -> list[Event]:
    log: list[Event] = [NodeRegistered(node=make_node(f"n{i}", cpu=cpu, mem=16_384)) for i in range(nodes)]
    for job in (make_job("a", count=6), make_job("b", count=4)):
        log.append(JobRegistered(job=job))
        commit(log, job)
    return log


def pending_events(state: InMemoryState, job: Job) -> tuple[list[Event], PlanResult]:
    ev = make_eval(job)
    res = schedule(state, ev, NOW)
    result = evaluate_plan(state, res.plan)
    return [plan_applied_event(result, NOW), EvalsUpserted(evals=[res.eval])], result


# (what the pending plan does, the job the next plan is for)
Change = Callable[[], tuple[Job, Job]]
CASES: dict[str, Change] = {
    # The pending plan fills nodes the next one picked too: some of its nodes must be refused.
    "placements compete for the same nodes": lambda: (make_job("c", count=8), make_job("d", count=8)),
    # The pending plan stops allocs: their room is free for the next one.
    "stops free room": lambda: (make_job("a", count=1), make_job("d", count=10)),
    # A destructive update stops and replaces at once.
    "destructive update": lambda: (make_job("a", count=6, cpu=700), make_job("d", count=6)),
    # A plan of the same job as the pending one, computed before it committed: stale.
    "same job twice": lambda: (make_job("a", count=9), make_job("a", count=12)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_optimistic_state_answers_as_the_state_after_the_pending_plan(name: str) -> None:
    log = base_log(nodes=6, cpu=2600)
    pending_job, next_job = CASES[name]()
    for job in {pending_job.id: pending_job, next_job.id: next_job}.values():
        log.append(JobRegistered(job=job))
    base = replayed(log)
    pending, _ = pending_events(base, pending_job)
    after = replayed(log + pending)
    optimistic = OptimisticState(base, pending)

    for node_id in after.nodes:
        assert optimistic.node_usage(node_id) == after.node_usage(node_id), node_id
        assert {a.id: a.terminal_status() for a in optimistic.allocs_by_node(node_id)} == {
            a.id: a.terminal_status() for a in after.allocs_by_node(node_id)
        }
    for job_id in ("a", "b", "c", "d"):
        assert {a.id for a in optimistic.allocs_by_job("default", job_id)} == {
            a.id for a in after.allocs_by_job("default", job_id)
        }
    finished = pending[1]
    assert isinstance(finished, EvalsUpserted)
    done = optimistic.eval(finished.evals[0].id)
    assert done is not None and done.terminal_status()

    # The next plan, computed on the base (its worker could not see the pending plan), is
    # verified against the optimistic state exactly as against the state after the pending one.
    res = schedule(base, make_eval(next_job), NOW)
    got = evaluate_plan(optimistic, res.plan)
    want = evaluate_plan(after, res.plan)
    assert got.rejected_nodes == want.rejected_nodes
    assert {n: [a.id for a in v] for n, v in got.node_allocation.items()} == {
        n: [a.id for a in v] for n, v in want.node_allocation.items()
    }
    assert {n: [a.id for a in v] for n, v in got.node_update.items()} == {
        n: [a.id for a in v] for n, v in want.node_update.items()
    }
    if name == "placements compete for the same nodes":
        assert got.rejected_nodes, "the case must make the pending plan matter"
    if name == "same job twice":
        assert got.rejected_nodes and not got.node_allocation  # refused whole as stale


def test_nothing_counts_twice_once_the_base_takes_in_the_pending_plan() -> None:
    log = base_log(nodes=4, cpu=2600)
    job = make_job("c", count=5)
    log.append(JobRegistered(job=job))
    base = replayed(log)
    pending, result = pending_events(base, job)
    assert result.node_allocation
    optimistic = OptimisticState(base, pending)
    usage = {n: optimistic.node_usage(n) for n in base.nodes}
    # The relay delivers the committed plan to the base while the optimistic view is in use.
    for i, ev in enumerate(pending, start=base.index + 1):
        apply(base, i, ev)
    assert {n: optimistic.node_usage(n) for n in base.nodes} == usage
    assert {n: base.node_usage(n) for n in base.nodes} == usage


def test_the_pending_plan_does_not_change_the_base() -> None:
    log = base_log(nodes=4, cpu=2600)
    job = make_job("a", count=1)
    log.append(JobRegistered(job=job))
    base = replayed(log)
    before = {n: base.node_usage(n) for n in base.nodes}
    allocs = {a.id: a.desired_status for a in base.allocs.values()}
    pending, _ = pending_events(base, job)
    optimistic = OptimisticState(base, pending)
    assert {n: optimistic.node_usage(n) for n in base.nodes} != before  # the stops count there
    assert {n: base.node_usage(n) for n in base.nodes} == before
    assert {a.id: a.desired_status for a in base.allocs.values()} == allocs
