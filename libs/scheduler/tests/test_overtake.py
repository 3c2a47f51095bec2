"""Plans that overtake a large plan being committed: a plan of another job verified against the
state with the pending plan's placements added (`PendingPlacements`) must be answered exactly as
it would be after the pending plan, and must leave no node over-committed at any index whichever
of the two commits first - which holds only for a pending plan that adds (`adds_only`).

Reference: Nomad's nomad/plan_apply.go verifies the next plan against a snapshot with the plan
being committed applied optimistically; here the next plan may also commit first.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from drover.model import Job
from drover.model.events import Event, JobRegistered, NodeRegistered
from drover.model.reducer import apply
from drover.scheduler import schedule
from drover.scheduler.plan import Plan, PlanResult
from drover.scheduler.planapply import PendingPlacements, adds_only, evaluate_plan, plan_applied_event
from drover.scheduler.state import InMemoryState

from .conftest import make_eval, make_job, make_node

NOW = 1_700_000_000_000_000_000
NODES, NODE_CPU = 6, 2600  # five 500-MHz allocs a node


def replayed(log: list[Event]) -> InMemoryState:
    state = InMemoryState()
    for i, event in enumerate(log, start=1):
        apply(state, i, event)
    return state


def base_log() -> list[Event]:
    """Six nodes; job a with 6 allocs and job b with 4 committed."""
    log: list[Event] = [
        NodeRegistered(node=make_node(f"n{i}", cpu=NODE_CPU, mem=16_384)) for i in range(NODES)
    ]
    for job in (make_job("a", count=6), make_job("b", count=4)):
        log.append(JobRegistered(job=job))
        state = replayed(log)
        res = schedule(state, make_eval(job), NOW)
        log.append(plan_applied_event(evaluate_plan(state, res.plan), NOW))
    return log


def verified(state: InMemoryState, job: Job) -> tuple[Plan, PlanResult]:
    plan = schedule(state, make_eval(job), NOW).plan
    return plan, evaluate_plan(state, plan)


def over_committed(log: list[Event]) -> list[tuple[int, str]]:
    """(index, node) wherever the log, replayed, shows a node past its capacity."""
    state = InMemoryState()
    bad = []
    for i, event in enumerate(log, start=1):
        apply(state, i, event)
        for node_id, node in state.nodes.items():
            cpu, mem, disk = state.node_usage(node_id)
            cap = node.capacity()
            if cpu > cap[0] or mem > cap[1] or disk > cap[2]:
                bad.append((i, node_id))
    return bad


# (the pending plan's job, the next plan's job, whether the pending plan only adds)
Case = Callable[[], tuple[Job, Job, bool]]
CASES: dict[str, Case] = {
    # Both want the room that is left: the next plan must lose the nodes the pending one fills.
    "placements compete for the same nodes": lambda: (make_job("c", count=12), make_job("d", count=12), True),
    "room for both": lambda: (make_job("c", count=2), make_job("d", count=2), True),
    # Scaling an existing job up only places.
    "scale up": lambda: (make_job("a", count=12), make_job("d", count=12), True),
    # Stops free room a plan verified after them may count on: it must commit after them.
    "scale down": lambda: (make_job("a", count=1), make_job("d", count=12), False),
    "destructive update": lambda: (
        make_job("a", count=6, cpu=700).model_copy(update={"version": 1}),
        make_job("d", count=6),
        False,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_plan_overtaking_an_adding_plan_is_answered_as_after_it_and_fits_in_either_order(
    name: str,
) -> None:
    pending_job, next_job, adding = CASES[name]()
    log = [*base_log(), JobRegistered(job=pending_job), JobRegistered(job=next_job)]
    base = replayed(log)
    _, pending = verified(base, pending_job)
    assert pending.node_allocation or pending.node_update, "the case must change something"
    assert adds_only(base, pending) is adding
    if not adding:
        return
    # The next plan was computed on the base: its worker had not seen the pending plan.
    next_plan = schedule(base, make_eval(next_job), NOW).plan
    got = evaluate_plan(PendingPlacements(base, pending), next_plan)
    pending_ev = plan_applied_event(pending, NOW)
    want = evaluate_plan(replayed([*log, pending_ev]), next_plan)
    assert got.rejected_nodes == want.rejected_nodes
    assert {n: [a.id for a in v] for n, v in got.node_allocation.items()} == {
        n: [a.id for a in v] for n, v in want.node_allocation.items()
    }
    next_ev = plan_applied_event(got, NOW)
    assert over_committed([*log, next_ev, pending_ev]) == []  # the next plan overtook
    assert over_committed([*log, pending_ev, next_ev]) == []
    if name == "placements compete for the same nodes":
        assert got.rejected_nodes, "the case must make the pending plan matter"
        # Verified against the base alone, the same plan would over-commit.
        blind = plan_applied_event(evaluate_plan(base, next_plan), NOW)
        assert over_committed([*log, pending_ev, blind])


def test_nothing_counts_twice_once_the_base_takes_in_the_pending_plan() -> None:
    job = make_job("c", count=8)
    log = [*base_log(), JobRegistered(job=job)]
    base = replayed(log)
    _, pending = verified(base, job)
    view = PendingPlacements(base, pending)
    usage = {n: view.node_usage(n) for n in base.nodes}
    by_node = {n: sorted(a.id for a in view.allocs_by_node(n)) for n in base.nodes}
    by_job = sorted(a.id for a in view.allocs_by_job("default", "c"))
    assert len(by_job) == 8
    # The relay delivers the committed plan to the base while the view is in use.
    apply(base, base.index + 1, plan_applied_event(pending, NOW))
    assert {n: view.node_usage(n) for n in base.nodes} == usage == {n: base.node_usage(n) for n in base.nodes}
    assert {n: sorted(a.id for a in view.allocs_by_node(n)) for n in base.nodes} == by_node
    assert sorted(a.id for a in view.allocs_by_job("default", "c")) == by_job


def test_the_view_does_not_change_the_base() -> None:
    job = make_job("c", count=8)
    log = [*base_log(), JobRegistered(job=job)]
    base = replayed(log)
    before = {n: base.node_usage(n) for n in base.nodes}
    _, pending = verified(base, job)
    view = PendingPlacements(base, pending)
    assert {n: view.node_usage(n) for n in base.nodes} != before
    assert {n: base.node_usage(n) for n in base.nodes} == before
    assert base.allocs_by_job("default", "c") == []


@pytest.mark.parametrize("overlay", [True, False], ids=["with the submitted plan", "without"])
def test_a_plan_scheduled_while_the_previous_one_commits_counts_its_placements(overlay: bool) -> None:
    """A worker schedules its next eval while its previous plan is being committed (the large
    lane's depth): against the replica with that plan's placements added, the next plan fits
    whole once the first is in; against the replica alone it picks the nodes the first filled."""
    # Room for both, exactly (six nodes of five slots), and binpacking wants the same nodes.
    # Eval IDs are fixed: they seed the node order, so the outcome is the same in any test order.
    first_job, next_job = make_job("c", count=15), make_job("d", count=15)
    log: list[Event] = [
        *(NodeRegistered(node=make_node(f"n{i}", cpu=NODE_CPU, mem=16_384)) for i in range(NODES)),
        JobRegistered(job=first_job),
        JobRegistered(job=next_job),
    ]
    base = replayed(log)
    first = schedule(base, make_eval(first_job).model_copy(update={"id": "first"}), NOW).plan
    view = PendingPlacements.of_plan(base, first) if overlay else base
    # The view reads usage through the base's flat array, as the node tables do.
    if overlay:
        for node_id in base.nodes:
            slot = base.usage_slots([node_id])[0]
            assert tuple(view.usage_buffer()[3 * slot : 3 * slot + 3]) == view.node_usage(node_id)  # type: ignore[union-attr]
    second = schedule(view, make_eval(next_job).model_copy(update={"id": "second"}), NOW).plan
    assert second.snapshot_index == base.index
    first_result = evaluate_plan(base, first)
    assert not first_result.rejected_nodes
    log.append(plan_applied_event(first_result, NOW))
    after = replayed(log)
    second_result = evaluate_plan(after, second)
    placed = sum(len(v) for v in second_result.node_allocation.values())
    if overlay:
        assert not second_result.rejected_nodes and placed == 15
        # once the base holds the first plan, the view counts it once
        view_after = PendingPlacements.of_plan(after, first)
        assert all(view_after.node_usage(n) == after.node_usage(n) for n in after.nodes)
    else:
        assert second_result.rejected_nodes and placed < 15
    log.append(plan_applied_event(second_result, NOW))
    assert over_committed(log) == []
