"""The plan applier: `evaluate_plan` (per-node verification, partial commits) and
`apply_plan_result` (indexes, NextAllocation, client-owned fields).

Reference: spec "Workers and the plan applier"; Nomad's nomad/plan_apply.go (evaluatePlanPlacements,
evaluateNodePlan) and nomad/state/state_store.go (upsertAllocsImpl, updateDeploymentWithAlloc).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from drover.model import (
    Allocation,
    AllocMetric,
    Deployment,
    DeploymentState,
    Job,
    Node,
    NodeCpuResources,
    NodeDiskResources,
    NodeMemoryResources,
    NodeResources,
    Resources,
    TaskGroup,
    TaskState,
)
from drover.model.alloc import (
    ALLOC_CLIENT_LOST,
    ALLOC_CLIENT_RUNNING,
    ALLOC_CLIENT_UNKNOWN,
    ALLOC_DESIRED_EVICT,
    ALLOC_DESIRED_STOP,
)
from drover.model.node import (
    NODE_INELIGIBLE,
    NODE_STATUS_DISCONNECTED,
    NODE_STATUS_DOWN,
    NODE_STATUS_INIT,
    NodeReservedResources,
)
from drover.scheduler.plan import Plan, PlanResult
from drover.scheduler.planapply import apply_plan_result, evaluate_plan, preemption_evals
from drover.scheduler.state import InMemoryState

NOW = 1_700_000_000_000_000_000


def mk_node(node_id: str, cpu: int = 1000, mem: int = 1000, disk: int = 10_000, **kw: Any) -> Node:
    return Node(
        id=node_id,
        name=node_id,
        node_resources=NodeResources(
            cpu=NodeCpuResources(cpu_shares=cpu),
            memory=NodeMemoryResources(memory_mb=mem),
            disk=NodeDiskResources(disk_mb=disk),
        ),
        **kw,
    )


def mk_alloc(
    alloc_id: str, node_id: str, cpu: int = 100, mem: int = 100, disk: int = 0, **kw: Any
) -> Allocation:
    kw.setdefault("job_id", "web")
    kw.setdefault("task_group", "g")
    kw.setdefault("name", f"web.g[{alloc_id}]")
    return Allocation(
        id=alloc_id,
        node_id=node_id,
        resources=Resources(cpu=cpu, memory_mb=mem, disk_mb=disk),
        **kw,
    )


def stopped(a: Allocation, client_status: str = "") -> Allocation:
    update: dict[str, object] = {"desired_status": ALLOC_DESIRED_STOP}
    if client_status:
        update["client_status"] = client_status
    return a.model_copy(update=update)


def mk_plan(
    place: Sequence[Allocation] = (),
    stop: Sequence[Allocation] = (),
    preempt: Sequence[Allocation] = (),
    all_at_once: bool = False,
) -> Plan:
    p = Plan(eval_id="ev", priority=50, job=None, all_at_once=all_at_once)
    for a in place:
        p.append_alloc(a)
    for a in stop:
        p.append_stop(a)
    for a in preempt:
        p.append_preemption(a)
    return p


def mk_state(nodes: list[Node], allocs: Sequence[Allocation] = (), index: int = 10) -> InMemoryState:
    s = InMemoryState()
    for n in nodes:
        s.upsert_node(n)
    for a in allocs:
        s.upsert_alloc(a)
    s.bump(index)
    return s


def committed_ids(r: PlanResult) -> set[str]:
    return {a.id for lst in r.node_allocation.values() for a in lst}


# --------------------------------------------------------------------------------------------
# evaluate_plan: per-node verdicts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node_kw", "present"),
    [
        pytest.param({}, False, id="node-missing"),
        pytest.param({"status": NODE_STATUS_DOWN}, True, id="node-down"),
        pytest.param({"status": NODE_STATUS_INIT}, True, id="node-initializing"),
        pytest.param({"status": NODE_STATUS_DISCONNECTED}, True, id="node-disconnected"),
        pytest.param({"scheduling_eligibility": NODE_INELIGIBLE}, True, id="node-ineligible"),
    ],
)
def test_new_placement_on_unusable_node_is_rejected_others_commit(
    node_kw: dict[str, Any], present: bool
) -> None:
    nodes = [mk_node("good")]
    if present:
        nodes.append(mk_node("bad", **node_kw))
    state = mk_state(nodes, index=42)
    plan = mk_plan(place=[mk_alloc("a1", "bad"), mk_alloc("a2", "good")])
    r = evaluate_plan(state, plan)
    assert r.rejected_nodes == ["bad"]
    assert "bad" not in r.node_allocation
    assert committed_ids(r) == {"a2"}
    assert r.refresh_index == 42
    ok, expected, actual = r.full_commit(plan)
    assert (ok, expected, actual) == (False, 2, 1)


def test_fully_fitting_plan_commits_without_refresh_index() -> None:
    state = mk_state([mk_node("n1"), mk_node("n2")], [mk_alloc("old", "n1", cpu=500, mem=500)])
    plan = mk_plan(place=[mk_alloc("a1", "n1", cpu=500, mem=500), mk_alloc("a2", "n2", cpu=1000, mem=1000)])
    r = evaluate_plan(state, plan)
    assert r.rejected_nodes == []
    assert r.refresh_index == 0
    assert committed_ids(r) == {"a1", "a2"}
    assert r.full_commit(plan) == (True, 2, 2)


def test_ineligible_node_still_commits_stops_and_inplace_updates() -> None:
    existing = mk_alloc("e1", "n1", cpu=300, mem=300, client_status=ALLOC_CLIENT_RUNNING)
    doomed = mk_alloc("e2", "n1", cpu=300, mem=300, client_status=ALLOC_CLIENT_RUNNING)
    state = mk_state([mk_node("n1", scheduling_eligibility=NODE_INELIGIBLE)], [existing, doomed])
    upd = existing.model_copy(update={"job_version": 1, "eval_id": "ev"})
    plan = mk_plan(place=[upd], stop=[stopped(doomed)])
    r = evaluate_plan(state, plan)
    assert r.rejected_nodes == []
    assert committed_ids(r) == {"e1"}
    assert [a.id for a in r.node_update["n1"]] == ["e2"]


def test_ineligible_node_rejects_the_whole_node_when_a_new_alloc_is_among_updates() -> None:
    existing = mk_alloc("e1", "n1")
    doomed = mk_alloc("e2", "n1")
    state = mk_state([mk_node("n1", scheduling_eligibility=NODE_INELIGIBLE)], [existing, doomed])
    plan = mk_plan(
        place=[existing.model_copy(update={"job_version": 1}), mk_alloc("new", "n1")], stop=[stopped(doomed)]
    )
    r = evaluate_plan(state, plan)
    assert r.rejected_nodes == ["n1"]
    assert r.node_allocation == {} and r.node_update == {}


@pytest.mark.parametrize(
    "node_kw",
    [
        pytest.param({"status": NODE_STATUS_DOWN}, id="down"),
        pytest.param({"scheduling_eligibility": NODE_INELIGIBLE}, id="ineligible"),
    ],
)
def test_stop_only_plan_commits_on_any_node(node_kw: dict[str, Any]) -> None:
    a = mk_alloc("e1", "n1")
    state = mk_state([mk_node("n1", **node_kw)], [a])
    plan = mk_plan(stop=[stopped(a, ALLOC_CLIENT_LOST)])
    r = evaluate_plan(state, plan)
    assert r.rejected_nodes == []
    assert [x.id for x in r.node_update["n1"]] == ["e1"]


def test_stop_only_plan_commits_on_a_missing_node() -> None:
    a = mk_alloc("e1", "gone")
    state = mk_state([mk_node("n1")], [a])
    r = evaluate_plan(state, mk_plan(stop=[stopped(a, ALLOC_CLIENT_LOST)]))
    assert r.rejected_nodes == []
    assert [x.id for x in r.node_update["gone"]] == ["e1"]


def test_disconnected_node_accepts_only_unknown_updates() -> None:
    a = mk_alloc("e1", "n1", client_status=ALLOC_CLIENT_RUNNING)
    state = mk_state([mk_node("n1", status=NODE_STATUS_DISCONNECTED)], [a])
    ok = evaluate_plan(state, mk_plan(place=[a.model_copy(update={"client_status": ALLOC_CLIENT_UNKNOWN})]))
    assert ok.rejected_nodes == []
    assert committed_ids(ok) == {"e1"}
    bad = evaluate_plan(state, mk_plan(place=[mk_alloc("new", "n1")]))
    assert bad.rejected_nodes == ["n1"]


@pytest.mark.parametrize(
    ("cpu", "mem", "disk", "fits"),
    [
        pytest.param(500, 500, 5000, True, id="exactly-full"),
        pytest.param(501, 500, 5000, False, id="cpu"),
        pytest.param(500, 501, 5000, False, id="memory"),
        pytest.param(500, 500, 5001, False, id="disk"),
    ],
)
def test_overcommit_rejected_per_dimension_with_partial_commit(
    cpu: int, mem: int, disk: int, fits: bool
) -> None:
    state = mk_state(
        [mk_node("n1", cpu=1000, mem=1000, disk=10_000), mk_node("n2")],
        [mk_alloc("old", "n1", cpu=500, mem=500, disk=5000)],
        index=77,
    )
    plan = mk_plan(place=[mk_alloc("big", "n1", cpu=cpu, mem=mem, disk=disk), mk_alloc("ok", "n2")])
    r = evaluate_plan(state, plan)
    if fits:
        assert r.rejected_nodes == []
        assert committed_ids(r) == {"big", "ok"}
        assert r.refresh_index == 0
    else:
        assert r.rejected_nodes == ["n1"]
        assert committed_ids(r) == {"ok"}
        assert r.refresh_index == 77


def test_reserved_resources_count_against_capacity() -> None:
    n = mk_node("n1", cpu=1000, mem=1000)
    n = n.model_copy(
        update={
            "reserved_resources": NodeReservedResources(
                cpu=NodeCpuResources(cpu_shares=200), memory=NodeMemoryResources(memory_mb=0)
            )
        }
    )
    state = mk_state([n])
    assert evaluate_plan(state, mk_plan(place=[mk_alloc("a", "n1", cpu=800)])).rejected_nodes == []
    assert evaluate_plan(state, mk_plan(place=[mk_alloc("a", "n1", cpu=801)])).rejected_nodes == ["n1"]


def test_terminal_allocs_do_not_count_against_capacity() -> None:
    done = mk_alloc("done", "n1", cpu=900, mem=900, client_status="complete")
    stopped_old = stopped(mk_alloc("st", "n1", cpu=900, mem=900))
    state = mk_state([mk_node("n1")], [done, stopped_old])
    r = evaluate_plan(state, mk_plan(place=[mk_alloc("a", "n1", cpu=1000, mem=1000)]))
    assert r.rejected_nodes == []


def test_stop_in_the_same_plan_makes_room() -> None:
    old = mk_alloc("old", "n1", cpu=800, mem=800)
    state = mk_state([mk_node("n1")], [old])
    new = mk_alloc("new", "n1", cpu=800, mem=800)
    without_stop = evaluate_plan(state, mk_plan(place=[new]))
    assert without_stop.rejected_nodes == ["n1"]
    with_stop = evaluate_plan(state, mk_plan(place=[new], stop=[stopped(old)]))
    assert with_stop.rejected_nodes == []
    assert committed_ids(with_stop) == {"new"}
    assert [a.id for a in with_stop.node_update["n1"]] == ["old"]


def test_preemption_in_the_same_plan_makes_room() -> None:
    low = mk_alloc("low", "n1", cpu=800, mem=800, job_id="batchy")
    state = mk_state([mk_node("n1")], [low])
    new = mk_alloc("new", "n1", cpu=800, mem=800, job_id="sys")
    r = evaluate_plan(
        state, mk_plan(place=[new], preempt=[low.model_copy(update={"desired_status": ALLOC_DESIRED_EVICT})])
    )
    assert r.rejected_nodes == []
    assert [a.id for a in r.node_preemptions["n1"]] == ["low"]


def test_preemption_of_an_alloc_that_already_finished_is_dropped() -> None:
    """Nomad's evaluatePlanPlacements keeps only preempted allocs that are still non-terminal in
    the applier's state: one that finished meanwhile is not rewritten to evict."""
    done = mk_alloc("done", "n1", cpu=500, mem=500, job_id="batchy", client_status="complete")
    running = mk_alloc("run", "n1", cpu=500, mem=500, job_id="batchy", client_status=ALLOC_CLIENT_RUNNING)
    state = mk_state([mk_node("n1")], [done, running])
    evict = {"desired_status": ALLOC_DESIRED_EVICT}
    plan = mk_plan(
        place=[mk_alloc("new", "n1", cpu=1000, mem=1000, job_id="sys")],
        preempt=[done.model_copy(update=evict), running.model_copy(update=evict)],
    )
    r = evaluate_plan(state, plan)
    assert r.rejected_nodes == []
    assert [a.id for a in r.node_preemptions["n1"]] == ["run"]


def test_the_applier_creates_one_preemption_eval_per_job_it_preempted() -> None:
    """Nomad's applyPlan: one pending eval (TriggeredBy preemption) per job whose allocs the
    committed result preempts; preemptions on a rejected node, or of a job gone, make none."""
    evict = {"desired_status": ALLOC_DESIRED_EVICT}
    a1 = mk_alloc("a1", "n1", cpu=400, mem=400, job_id="low", client_status=ALLOC_CLIENT_RUNNING)
    a2 = mk_alloc("a2", "n1", cpu=400, mem=400, job_id="low", client_status=ALLOC_CLIENT_RUNNING)
    gone = mk_alloc("g1", "n1", cpu=200, mem=200, job_id="gone", client_status=ALLOC_CLIENT_RUNNING)
    b1 = mk_alloc("b1", "n2", cpu=900, mem=900, job_id="other", client_status=ALLOC_CLIENT_RUNNING)
    state = mk_state([mk_node("n1"), mk_node("n2")], [a1, a2, gone, b1])
    state.upsert_job(Job(id="low", type="batch", priority=20))
    state.upsert_job(Job(id="other", priority=30))
    plan = mk_plan(
        place=[
            mk_alloc("s1", "n1", cpu=1000, mem=1000, job_id="sys"),
            # n2 refuses this one: b1's preemption is not committed.
            mk_alloc("s2", "n2", cpu=1200, mem=1000, job_id="sys"),
        ],
        preempt=[a.model_copy(update=evict) for a in (a1, a2, gone, b1)],
    )
    r = evaluate_plan(state, plan)
    assert r.rejected_nodes == ["n2"]
    ids = iter(["e1", "e2"])
    evals = preemption_evals(state, r, NOW, lambda: next(ids))
    assert [(e.id, e.job_id, e.type, e.priority, e.triggered_by, e.status) for e in evals] == [
        ("e1", "low", "batch", 20, "preemption", "pending")
    ]
    assert evals[0].create_time == evals[0].modify_time == NOW
    assert preemption_evals(state, evaluate_plan(state, mk_plan(place=[mk_alloc("x", "n2")])), NOW, str) == []


def test_inplace_update_that_grows_beyond_capacity_is_rejected() -> None:
    # Drover's invariant: no node is ever over-committed, whatever the plan does.
    a = mk_alloc("a", "n1", cpu=600, mem=600)
    b = mk_alloc("b", "n1", cpu=300, mem=300)
    state = mk_state([mk_node("n1")], [a, b])
    grown = a.model_copy(update={"resources": Resources(cpu=800, memory_mb=600, disk_mb=0), "job_version": 1})
    r = evaluate_plan(state, mk_plan(place=[grown]))
    assert r.rejected_nodes == ["n1"]
    same = a.model_copy(update={"job_version": 1})
    assert evaluate_plan(state, mk_plan(place=[same])).rejected_nodes == []


def test_inplace_update_is_not_double_counted() -> None:
    a = mk_alloc("a", "n1", cpu=900, mem=900)
    state = mk_state([mk_node("n1")], [a])
    r = evaluate_plan(state, mk_plan(place=[a.model_copy(update={"job_version": 1})]))
    assert r.rejected_nodes == []


def test_all_at_once_rejects_everything() -> None:
    old = mk_alloc("old", "n2", cpu=900, mem=900)
    state = mk_state([mk_node("n1"), mk_node("n2"), mk_node("n3")], [old], index=9)
    plan = mk_plan(
        place=[mk_alloc("a1", "n1"), mk_alloc("a2", "n2", cpu=500), mk_alloc("a3", "n3")],
        stop=[stopped(mk_alloc("x", "n3"))],
        all_at_once=True,
    )
    plan.deployment = Deployment(id="d1", job_id="web")
    r = evaluate_plan(state, plan)
    assert r.node_allocation == {}
    assert r.node_update == {}
    assert r.node_preemptions == {}
    assert r.deployment is None
    assert "n2" in r.rejected_nodes
    assert r.refresh_index == 9
    assert r.full_commit(plan)[0] is False


def test_all_at_once_that_fits_commits_everything() -> None:
    state = mk_state([mk_node("n1"), mk_node("n2")])
    plan = mk_plan(place=[mk_alloc("a1", "n1"), mk_alloc("a2", "n2")], all_at_once=True)
    r = evaluate_plan(state, plan)
    assert r.rejected_nodes == [] and committed_ids(r) == {"a1", "a2"}


def test_two_plans_from_the_same_snapshot_never_overcommit() -> None:
    """Two workers computed plans on the same snapshot: each alone fits, together they do not.
    The serial applier must commit the first and (partially) reject the second."""
    state = mk_state([mk_node("n1"), mk_node("n2")], index=5)
    p1 = mk_plan(place=[mk_alloc("a1", "n1", cpu=600, mem=600, job_id="j1")])
    p2 = mk_plan(
        place=[mk_alloc("b1", "n1", cpu=600, mem=600, job_id="j2"), mk_alloc("b2", "n2", job_id="j2")]
    )
    r1 = evaluate_plan(state, p1)
    assert r1.rejected_nodes == []
    apply_plan_result(state, r1, 6, NOW)
    r2 = evaluate_plan(state, p2)
    assert r2.rejected_nodes == ["n1"]
    assert committed_ids(r2) == {"b2"}
    assert r2.refresh_index == 6
    apply_plan_result(state, r2, 7, NOW)
    for n in state.all_nodes():
        used = [0, 0, 0]
        for a in state.allocs_by_node(n.id):
            if not a.terminal_status():
                used[0] += a.resources.cpu
                used[1] += a.resources.memory_mb
                used[2] += a.resources.disk_mb
        assert all(u <= c for u, c in zip(used, n.capacity(), strict=True))
        assert state.node_usage(n.id) == tuple(used)


# --------------------------------------------------------------------------------------------
# apply_plan_result
# --------------------------------------------------------------------------------------------


def test_apply_new_alloc_sets_indexes_and_times() -> None:
    state = mk_state([mk_node("n1")], index=10)
    r = evaluate_plan(state, mk_plan(place=[mk_alloc("a", "n1")]))
    apply_plan_result(state, r, 11, NOW)
    a = state.alloc("a")
    assert a is not None
    assert (a.create_index, a.modify_index, a.alloc_modify_index) == (11, 11, 11)
    assert a.modify_time == NOW
    assert state.index == 11


def test_apply_update_keeps_create_index_and_bumps_modify_indexes() -> None:
    old = mk_alloc(
        "a", "n1", client_status=ALLOC_CLIENT_RUNNING, create_index=3, modify_index=4, alloc_modify_index=3
    )
    state = mk_state([mk_node("n1")], [old], index=10)
    r = evaluate_plan(state, mk_plan(place=[old.model_copy(update={"job_version": 2})]))
    apply_plan_result(state, r, 11, NOW)
    a = state.alloc("a")
    assert a is not None
    assert a.create_index == 3
    assert a.modify_index == 11
    assert a.job_version == 2
    # Nomad's upsertAllocsImpl sets AllocModifyIndex on every server-side upsert of an alloc.
    assert a.alloc_modify_index == 11


def test_apply_sets_next_allocation_on_the_previous_alloc() -> None:
    prev = stopped(mk_alloc("prev", "n1", create_index=2, modify_index=2), ALLOC_CLIENT_LOST)
    state = mk_state([mk_node("n1"), mk_node("n2")], [prev], index=10)
    repl = mk_alloc("repl", "n2", previous_allocation="prev")
    r = evaluate_plan(state, mk_plan(place=[repl]))
    apply_plan_result(state, r, 12, NOW)
    p = state.alloc("prev")
    assert p is not None
    assert p.next_allocation == "repl"
    assert p.modify_index == 12
    assert p.create_index == 2
    n = state.alloc("repl")
    assert n is not None and n.previous_allocation == "prev" and n.create_index == 12


def test_apply_plain_update_keeps_client_owned_fields() -> None:
    old = mk_alloc(
        "a",
        "n1",
        client_status=ALLOC_CLIENT_RUNNING,
        client_description="Tasks are running",
        task_states={"t": TaskState(state="running", started_at=5)},
    )
    state = mk_state([mk_node("n1")], [old])
    # The scheduler's copy is stale: it still says pending, with no task states.
    upd = old.model_copy(
        update={"client_status": "pending", "client_description": "", "task_states": {}, "job_version": 1}
    )
    r = evaluate_plan(state, mk_plan(place=[upd]))
    apply_plan_result(state, r, 11, NOW)
    a = state.alloc("a")
    assert a is not None
    assert a.client_status == ALLOC_CLIENT_RUNNING
    assert a.task_states["t"].state == "running"
    assert a.job_version == 1
    # Nomad keeps ClientDescription together with ClientStatus (upsertAllocsImpl).
    assert a.client_description == "Tasks are running"


def test_apply_plain_stop_keeps_client_status() -> None:
    old = mk_alloc("a", "n1", client_status=ALLOC_CLIENT_RUNNING)
    state = mk_state([mk_node("n1")], [old])
    r = evaluate_plan(state, mk_plan(stop=[stopped(old.model_copy(update={"client_status": "pending"}))]))
    apply_plan_result(state, r, 11, NOW)
    a = state.alloc("a")
    assert a is not None
    assert a.desired_status == ALLOC_DESIRED_STOP
    assert a.client_status == ALLOC_CLIENT_RUNNING
    assert state.node_usage("n1") == (0, 0, 0)


@pytest.mark.parametrize("server_status", [ALLOC_CLIENT_LOST, ALLOC_CLIENT_UNKNOWN])
def test_apply_takes_lost_and_unknown_from_the_server(server_status: str) -> None:
    old = mk_alloc("a", "n1", client_status=ALLOC_CLIENT_RUNNING)
    state = mk_state([mk_node("n1", status=NODE_STATUS_DISCONNECTED)], [old])
    if server_status == ALLOC_CLIENT_LOST:
        plan = mk_plan(stop=[stopped(old, ALLOC_CLIENT_LOST)])
    else:
        plan = mk_plan(place=[old.model_copy(update={"client_status": ALLOC_CLIENT_UNKNOWN})])
    r = evaluate_plan(state, plan)
    assert r.rejected_nodes == []
    apply_plan_result(state, r, 11, NOW)
    a = state.alloc("a")
    assert a is not None
    assert a.client_status == server_status


def test_apply_preemption_evicts_and_frees_usage() -> None:
    low = mk_alloc("low", "n1", cpu=800, mem=800, job_id="batchy", client_status=ALLOC_CLIENT_RUNNING)
    state = mk_state([mk_node("n1")], [low])
    new = mk_alloc("new", "n1", cpu=800, mem=800, job_id="sys", preempted_allocations=["low"])
    evicted = low.model_copy(update={"desired_status": ALLOC_DESIRED_EVICT, "preempted_by_allocation": "new"})
    r = evaluate_plan(state, mk_plan(place=[new], preempt=[evicted]))
    apply_plan_result(state, r, 11, NOW)
    lo = state.alloc("low")
    assert lo is not None
    assert lo.desired_status == ALLOC_DESIRED_EVICT
    assert lo.preempted_by_allocation == "new"
    assert lo.client_status == ALLOC_CLIENT_RUNNING
    assert lo.modify_index == 11
    assert state.node_usage("n1") == (800, 800, 0)


def test_apply_deployment_and_placed_allocs() -> None:
    state = mk_state([mk_node("n1")], index=10)
    dep = Deployment(id="d1", job_id="web", task_groups={"g": DeploymentState(desired_total=2)})
    plan = mk_plan(place=[mk_alloc("a1", "n1", deployment_id="d1"), mk_alloc("a2", "n1", deployment_id="d1")])
    plan.deployment = dep
    r = evaluate_plan(state, plan)
    apply_plan_result(state, r, 11, NOW)
    d = state.deployment("d1")
    assert d is not None
    assert d.create_index == 11 and d.modify_index == 11
    assert state.latest_deployment("default", "web") is not None
    # Nomad (updateDeploymentWithAlloc): every new alloc of a deployment counts as placed.
    assert d.task_groups["g"].placed_allocs == 2


def test_apply_inplace_update_does_not_count_as_placed() -> None:
    dep = Deployment(
        id="d1", job_id="web", task_groups={"g": DeploymentState(desired_total=1, placed_allocs=1)}
    )
    old = mk_alloc("a1", "n1", deployment_id="d1")
    state = mk_state([mk_node("n1")], [old], index=10)
    state.upsert_deployment(dep)
    r = evaluate_plan(state, mk_plan(place=[old.model_copy(update={"job_version": 1})]))
    apply_plan_result(state, r, 11, NOW)
    d = state.deployment("d1")
    assert d is not None and d.task_groups["g"].placed_allocs == 1


def test_apply_rejected_nodes_change_nothing_there() -> None:
    state = mk_state([mk_node("n1"), mk_node("n2", status=NODE_STATUS_DOWN)], index=10)
    plan = mk_plan(place=[mk_alloc("a1", "n1"), mk_alloc("a2", "n2")])
    r = evaluate_plan(state, plan)
    apply_plan_result(state, r, 11, NOW)
    assert state.alloc("a1") is not None
    assert state.alloc("a2") is None
    assert state.allocs_by_node("n2") == []


def test_metrics_field_survives_apply() -> None:
    state = mk_state([mk_node("n1")])
    a = mk_alloc("a", "n1", metrics=AllocMetric(nodes_evaluated=3))
    apply_plan_result(state, evaluate_plan(state, mk_plan(place=[a])), 11, NOW)
    got = state.alloc("a")
    assert got is not None and got.metrics is not None and got.metrics.nodes_evaluated == 3


def test_a_plan_older_than_a_commit_of_the_same_job_is_refused_whole() -> None:
    from drover.model import Job, Resources, Task, TaskGroup
    from drover.model.canonicalize import canonicalize
    from drover.model.evaluation import Evaluation
    from drover.scheduler import schedule

    state = InMemoryState()
    for i in range(3):
        state.upsert_node(
            Node(
                id=f"n{i}",
                node_resources=NodeResources(
                    cpu=NodeCpuResources(cpu_shares=4000),
                    memory=NodeMemoryResources(memory_mb=8192),
                    disk=NodeDiskResources(disk_mb=10_000),
                ),
            )
        )
    job = canonicalize(
        Job(
            id="web",
            task_groups=[TaskGroup(name="g", count=3, tasks=[Task(name="t", resources=Resources(cpu=100))])],
        )
    )
    state.upsert_job(job)
    state.bump(10)
    first = schedule(state, Evaluation(id="e1", job_id="web"), NOW).plan
    second = schedule(state, Evaluation(id="e2", job_id="web"), NOW).plan  # same snapshot: same names
    apply_plan_result(state, evaluate_plan(state, first), 11, NOW)
    result = evaluate_plan(state, second)
    assert result.node_allocation == {} and result.rejected_nodes and result.refresh_index == 11
    assert sorted(a.name for a in state.allocs.values()) == ["web.g[0]", "web.g[1]", "web.g[2]"]


def test_a_plan_computed_before_another_plan_of_its_job_committed_is_refused_whole() -> None:
    """Its reconciliation may repeat what the committed plan did, so no node of it commits;
    the result says why (the applier logs it), and a plan computed after the commit goes in."""
    state = InMemoryState()
    for n in ("n1", "n2"):
        state.upsert_node(mk_node(n, status="ready"))
    state.bump(2)
    job = Job(id="web", task_groups=[TaskGroup(name="g", count=2)])

    def plan(alloc_id: str, node: str, snapshot: int) -> Plan:
        p = Plan(eval_id=f"e-{alloc_id}", priority=50, job=job, snapshot_index=snapshot)
        p.append_alloc(mk_alloc(alloc_id, node))
        return p

    first, second = plan("a1", "n1", 2), plan("a2", "n2", 2)  # both from index 2
    committed = evaluate_plan(state, first)
    assert not committed.stale and not committed.rejected_nodes
    apply_plan_result(state, committed, 3, NOW)
    late = evaluate_plan(state, second)
    assert late.stale and late.rejected_nodes == ["n2"] and not late.node_allocation
    assert late.refresh_index == state.index
    fresh = evaluate_plan(state, plan("a3", "n2", state.index))
    assert not fresh.stale and "n2" in fresh.node_allocation
