"""The system and sysbatch scheduler, end to end through the in-memory Harness.

Reference: spec "Nodes", "Deployments" (system jobs roll with max_parallel), "Preemption"; Nomad's
scheduler/scheduler_system.go and scheduler/preemption.go.
"""

from __future__ import annotations

from typing import Any

import pytest

from drover.model import (
    Allocation,
    Constraint,
    DrainSpec,
    DrainStrategy,
    DriverInfo,
    Evaluation,
    Job,
    Node,
    NodeCpuResources,
    NodeDiskResources,
    NodeMemoryResources,
    NodeResources,
    Resources,
    Task,
    TaskGroup,
    TaskState,
    UpdateStrategy,
)
from drover.model.alloc import (
    ALLOC_CLIENT_COMPLETE,
    ALLOC_CLIENT_LOST,
    ALLOC_CLIENT_RUNNING,
    ALLOC_DESIRED_EVICT,
    ALLOC_DESIRED_RUN,
    ALLOC_DESIRED_STOP,
)
from drover.model.canonicalize import canonicalize
from drover.model.durations import SECOND
from drover.model.evaluation import (
    EVAL_STATUS_BLOCKED,
    TRIGGER_JOB_REGISTER,
    TRIGGER_NODE_UPDATE,
    TRIGGER_PREEMPTION,
    TRIGGER_ROLLING_UPDATE,
)
from drover.model.node import NODE_INELIGIBLE, NODE_STATUS_DOWN, NODE_STATUS_INIT
from drover.scheduler.harness import Harness
from drover.scheduler.schedule import schedule
from drover.scheduler.system import SystemScheduler

_EVAL_SEQ = [0]


def eval_id() -> str:
    _EVAL_SEQ[0] += 1
    return f"ev-{_EVAL_SEQ[0]:04d}"


def mk_node(i: int | str, *, cpu: int = 4000, mem: int = 4096, disk: int = 100_000, **kw: Any) -> Node:
    meta = kw.pop("meta", {"rack": f"r{i}" if isinstance(i, int) else "r0"})
    drivers = kw.pop("drivers", {"mock": DriverInfo()})
    nid = f"n{i}" if isinstance(i, int) else i
    return Node(
        id=nid,
        name=nid,
        attributes={"kernel.name": "linux"},
        drivers=drivers,
        meta=meta,
        node_resources=NodeResources(
            cpu=NodeCpuResources(cpu_shares=cpu),
            memory=NodeMemoryResources(memory_mb=mem),
            disk=NodeDiskResources(disk_mb=disk),
        ),
        **kw,
    )


def task(cpu: int = 100, mem: int = 128, **cfg: Any) -> Task:
    return Task(name="t", driver="mock", config=dict(cfg), resources=Resources(cpu=cpu, memory_mb=mem))


def sys_job(
    job_id: str = "sys",
    *,
    type: str = "system",
    cpu: int = 100,
    mem: int = 128,
    priority: int = 50,
    groups: list[TaskGroup] | None = None,
    **kw: Any,
) -> Job:
    tgs = groups or [TaskGroup(name="g", tasks=[task(cpu, mem)])]
    return canonicalize(Job(id=job_id, type=type, priority=priority, task_groups=tgs, **kw))


def register(h: Harness, job: Job, *, version: int | None = None) -> Job:
    h.state.bump()
    old = h.state.job(job.namespace, job.id)
    v = version if version is not None else (old.version + 1 if old is not None else 0)
    job = job.model_copy(
        update={
            "version": v,
            "create_index": old.create_index if old is not None else h.state.index,
            "modify_index": h.state.index,
            "job_modify_index": h.state.index,
        }
    )
    h.state.upsert_job(job)
    return job


def run(h: Harness, job: Job, trigger: str = TRIGGER_JOB_REGISTER, node_id: str = "") -> Any:
    evaluation = Evaluation(
        id=eval_id(),
        job_id=job.id,
        type=job.type,
        priority=job.priority,
        triggered_by=trigger,
        node_id=node_id,
    )
    return h.process(evaluation)


def live(h: Harness, job_id: str) -> list[Allocation]:
    return [a for a in h.state.allocs_by_job("default", job_id) if not a.terminal_status()]


def live_nodes(h: Harness, job_id: str) -> list[str]:
    return sorted(a.node_id for a in live(h, job_id))


def harness(*nodes: Node) -> Harness:
    h = Harness()
    for n in nodes:
        h.state.upsert_node(n)
    return h


def set_node(h: Harness, node_id: str, **update: Any) -> None:
    n = h.state.node(node_id)
    assert n is not None
    h.state.bump()
    h.state.upsert_node(n.model_copy(update={**update, "modify_index": h.state.index}))


def set_client_status(h: Harness, a: Allocation, status: str, *, failed: bool = False) -> None:
    ts = TaskState(state="dead" if status in ("complete", "failed") else "running", failed=failed)
    h.state.bump()
    h.state.upsert_alloc(a.model_copy(update={"client_status": status, "task_states": {"t": ts}}))


# --------------------------------------------------------------------------------------------
# One alloc per feasible node
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("jtype", ["system", "sysbatch"])
def test_one_alloc_per_feasible_node(jtype: str) -> None:
    nodes = [mk_node(i, meta={"rack": "r1" if i < 2 else "r2"}) for i in range(6)]
    h = harness(*nodes)
    job = register(
        h, sys_job(type=jtype, constraints=[Constraint(ltarget="${meta.rack}", operand="!=", rtarget="r1")])
    )
    res = run(h, job)
    assert live_nodes(h, "sys") == ["n2", "n3", "n4", "n5"]
    assert {a.name for a in live(h, "sys")} == {"sys.g[0]"}
    assert all(a.job_version == job.version and a.desired_status == ALLOC_DESIRED_RUN for a in live(h, "sys"))
    assert res.plan.annotations["g"].place == 4
    assert res.eval.failed_tg_allocs == {}
    assert res.blocked_eval is None
    # Converged: a second eval changes nothing.
    again = run(h, job)
    assert again.plan.is_noop()
    assert again.plan.annotations["g"].ignore == 4


def test_one_alloc_per_group_per_node() -> None:
    h = harness(*[mk_node(i) for i in range(3)])
    job = register(
        h,
        sys_job(groups=[TaskGroup(name="a", tasks=[task()]), TaskGroup(name="b", tasks=[task()])]),
    )
    run(h, job)
    got = sorted((a.node_id, a.task_group, a.name) for a in live(h, "sys"))
    assert got == [(f"n{i}", g, f"sys.{g}[0]") for i in range(3) for g in ("a", "b")]


def test_nodes_outside_datacenters_pool_or_not_ready_get_none() -> None:
    nodes = [
        mk_node("ok1", datacenter="dc1"),
        mk_node("ok2", datacenter="dc1"),
        mk_node("otherdc", datacenter="dc2"),
        mk_node("otherpool", datacenter="dc1", node_pool="gpu"),
        mk_node("down", datacenter="dc1", status=NODE_STATUS_DOWN),
        mk_node("init", datacenter="dc1", status=NODE_STATUS_INIT),
        mk_node("inelig", datacenter="dc1", scheduling_eligibility=NODE_INELIGIBLE),
        mk_node("drain", datacenter="dc1", drain_strategy=DrainStrategy()),
        mk_node("nodriver", datacenter="dc1", drivers={}),
    ]
    h = harness(*nodes)
    job = register(h, sys_job(datacenters=["dc1"]))
    run(h, job)
    assert live_nodes(h, "sys") == ["ok1", "ok2"]


def test_datacenter_glob() -> None:
    h = harness(
        mk_node("a", datacenter="us-east-1"),
        mk_node("b", datacenter="us-west-1"),
        mk_node("c", datacenter="eu-1"),
    )
    job = register(h, sys_job(datacenters=["us-*"]))
    run(h, job)
    assert live_nodes(h, "sys") == ["a", "b"]


def test_node_that_does_not_fit_fails_with_dimension_exhausted_others_placed() -> None:
    h = harness(mk_node(0), mk_node(1, mem=64), mk_node(2))
    job = register(h, sys_job(mem=128))
    res = run(h, job)
    assert live_nodes(h, "sys") == ["n0", "n2"]
    m = res.eval.failed_tg_allocs["g"]
    assert m.dimension_exhausted.get("memory") == 1
    assert res.eval.queued_allocations.get("g") == 1
    assert res.blocked_eval is not None and res.blocked_eval.status == EVAL_STATUS_BLOCKED


def test_place_annotation_counts_placements_that_failed_for_resources() -> None:
    """Nomad's desiredUpdates counts every placement the diff asks for (Place); only nodes
    filtered by constraints are taken back. Failed placements are queued but still "Place",
    as in Drover's generic scheduler: placed + queued == Place."""
    h = harness(
        mk_node(0),
        mk_node(1, mem=64, meta={"rack": "r0"}),
        mk_node(2, mem=64, meta={"rack": "r2"}),
        mk_node(3, meta={"rack": "r1"}),
    )
    job = register(
        h, sys_job(mem=128, constraints=[Constraint(ltarget="${meta.rack}", operand="!=", rtarget="r1")])
    )
    res = run(h, job)
    assert len(res.plan.placements()) == 1
    assert res.eval.queued_allocations == {"g": 2}
    assert res.plan.annotations["g"].place == 3


# --------------------------------------------------------------------------------------------
# Node changes
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("jtype", ["system", "sysbatch"])
def test_new_node_joining_gets_an_alloc_on_node_update(jtype: str) -> None:
    h = harness(mk_node(0), mk_node(1))
    job = register(h, sys_job(type=jtype))
    run(h, job)
    before = {a.id for a in live(h, "sys")}
    h.state.bump()
    h.state.upsert_node(mk_node(2))
    res = run(h, job, TRIGGER_NODE_UPDATE, node_id="n2")
    placed = res.plan.placements()
    assert [a.node_id for a in placed] == ["n2"]
    assert res.plan.node_update == {}
    assert live_nodes(h, "sys") == ["n0", "n1", "n2"]
    assert before < {a.id for a in live(h, "sys")}


def test_node_going_down_loses_its_alloc_and_nothing_replaces_it() -> None:
    h = harness(mk_node(0), mk_node(1), mk_node(2))
    job = register(h, sys_job())
    run(h, job)
    on_n1 = [a for a in live(h, "sys") if a.node_id == "n1"]
    assert len(on_n1) == 1
    set_node(h, "n1", status=NODE_STATUS_DOWN)
    res = run(h, job, TRIGGER_NODE_UPDATE, node_id="n1")
    assert res.plan.placements() == []
    stops = res.plan.stops()
    assert [a.id for a in stops] == [on_n1[0].id]
    a = h.state.alloc(on_n1[0].id)
    assert a is not None
    assert a.desired_status == ALLOC_DESIRED_STOP
    assert a.client_status == ALLOC_CLIENT_LOST
    assert live_nodes(h, "sys") == ["n0", "n2"]
    assert len(h.state.allocs_by_job("default", "sys")) == 3


def test_node_removed_loses_its_alloc() -> None:
    h = harness(mk_node(0), mk_node(1))
    job = register(h, sys_job())
    run(h, job)
    h.state.bump()
    h.state.delete_node("n1")
    run(h, job, TRIGGER_NODE_UPDATE, node_id="n1")
    assert live_nodes(h, "sys") == ["n0"]
    gone = [a for a in h.state.allocs_by_job("default", "sys") if a.node_id == "n1"]
    assert len(gone) == 1 and gone[0].client_status == ALLOC_CLIENT_LOST


def test_draining_node_stops_its_system_alloc() -> None:
    h = harness(mk_node(0), mk_node(1))
    job = register(h, sys_job())
    run(h, job)
    set_node(h, "n1", drain_strategy=DrainStrategy(drain_spec=DrainSpec(ignore_system_jobs=False)))
    res = run(h, job, "node-drain", node_id="n1")
    assert res.plan.placements() == []
    assert [a.node_id for a in res.plan.stops()] == ["n1"]
    assert live_nodes(h, "sys") == ["n0"]


def test_draining_node_keeps_system_alloc_when_drain_ignores_system_jobs() -> None:
    h = harness(mk_node(0), mk_node(1))
    job = register(h, sys_job())
    run(h, job)
    set_node(h, "n1", drain_strategy=DrainStrategy(drain_spec=DrainSpec(ignore_system_jobs=True)))
    res = run(h, job, "node-drain", node_id="n1")
    assert res.plan.is_noop()
    assert live_nodes(h, "sys") == ["n0", "n1"]


def test_ineligible_node_keeps_its_alloc_but_gets_no_new_one() -> None:
    h = harness(mk_node(0), mk_node(1))
    job = register(h, sys_job())
    run(h, job)
    set_node(h, "n1", scheduling_eligibility=NODE_INELIGIBLE)
    res = run(h, job, TRIGGER_NODE_UPDATE, node_id="n1")
    assert res.plan.node_update == {}
    assert live_nodes(h, "sys") == ["n0", "n1"]


def test_constraint_change_stops_allocs_on_nodes_no_longer_feasible() -> None:
    h = harness(*[mk_node(i, meta={"rack": "r1" if i == 0 else "r2"}) for i in range(3)])
    job = register(h, sys_job())
    run(h, job)
    assert live_nodes(h, "sys") == ["n0", "n1", "n2"]
    job2 = register(
        h,
        job.model_copy(
            update={"constraints": [Constraint(ltarget="${meta.rack}", operand="!=", rtarget="r1")]}
        ),
    )
    res = run(h, job2)
    assert [a.node_id for a in res.plan.stops()] == ["n0"]
    assert live_nodes(h, "sys") == ["n1", "n2"]


def test_stopped_job_stops_every_alloc() -> None:
    h = harness(mk_node(0), mk_node(1))
    job = register(h, sys_job())
    run(h, job)
    job2 = register(h, job.model_copy(update={"stop": True}))
    res = run(h, job2, "job-deregister")
    assert len(res.plan.stops()) == 2
    assert live(h, "sys") == []


# --------------------------------------------------------------------------------------------
# Rolling updates
# --------------------------------------------------------------------------------------------


def test_rolling_update_respects_max_parallel_and_stagger() -> None:
    h = harness(*[mk_node(i) for i in range(6)])
    upd = UpdateStrategy(max_parallel=2, stagger=30 * SECOND)
    job = register(h, sys_job(update=upd))
    run(h, job)
    v0 = {a.id for a in live(h, "sys")}
    assert len(v0) == 6

    # A task config change is destructive.
    tg = job.task_groups[0].model_copy(deep=True)
    tg.tasks[0].config = {"image": "v2"}
    job2 = register(h, job.model_copy(update={"task_groups": [tg]}))
    res = run(h, job2)
    ann = res.plan.annotations["g"]
    assert ann.destructive_update == 2
    assert ann.ignore == 4
    assert len(res.plan.stops()) == 2
    assert len(res.plan.placements()) == 2
    # Each replacement lands on the node it replaces.
    assert sorted(a.node_id for a in res.plan.stops()) == sorted(a.node_id for a in res.plan.placements())
    rolling = [e for e in res.create_evals if e.triggered_by == TRIGGER_ROLLING_UPDATE]
    assert len(rolling) == 1
    nxt = rolling[0]
    assert nxt.wait == 30 * SECOND
    assert nxt.job_id == "sys" and nxt.type == "system" and nxt.previous_eval == res.eval.id
    assert res.eval.next_eval == nxt.id
    assert nxt in h.created_evals
    versions = sorted(a.job_version for a in live(h, "sys"))
    assert versions == [0, 0, 0, 0, 1, 1]

    res2 = h.process(nxt)
    assert res2.plan.annotations["g"].destructive_update == 2
    assert len([e for e in res2.create_evals if e.triggered_by == TRIGGER_ROLLING_UPDATE]) == 1
    res3 = h.process(next(e for e in res2.create_evals if e.triggered_by == TRIGGER_ROLLING_UPDATE))
    assert res3.plan.annotations["g"].destructive_update == 2
    # Done: no further rolling eval.
    assert [e for e in res3.create_evals if e.triggered_by == TRIGGER_ROLLING_UPDATE] == []
    assert res3.eval.next_eval == ""
    assert sorted(a.job_version for a in live(h, "sys")) == [1] * 6
    assert run(h, job2).plan.is_noop()


def test_destructive_replacement_is_chained_to_the_alloc_it_replaces() -> None:
    """Nomad's SystemScheduler.computePlacements: `alloc.PreviousAllocation = missing.Alloc.ID`
    for a replacement; the applier then sets NextAllocation on the old alloc."""
    h = harness(mk_node(0), mk_node(1))
    job = register(h, sys_job(update=UpdateStrategy(max_parallel=0)))
    run(h, job)
    old = {a.node_id: a.id for a in live(h, "sys")}
    tg = job.task_groups[0].model_copy(deep=True)
    tg.tasks[0].config = {"image": "v2"}
    job2 = register(h, job.model_copy(update={"task_groups": [tg]}))
    res = run(h, job2)
    assert res.plan.annotations["g"].destructive_update == 2
    for a in res.plan.placements():
        assert a.previous_allocation == old[a.node_id]
    for node_id, old_id in old.items():
        prev = h.state.alloc(old_id)
        assert prev is not None and prev.desired_status == ALLOC_DESIRED_STOP
        new = [a for a in live(h, "sys") if a.node_id == node_id]
        assert len(new) == 1
        assert prev.next_allocation == new[0].id


def test_inplace_update_is_not_limited_by_max_parallel() -> None:
    h = harness(*[mk_node(i) for i in range(6)])
    job = register(h, sys_job(update=UpdateStrategy(max_parallel=2, stagger=30 * SECOND)))
    run(h, job)
    # Priority is not a task change: every alloc is updated in place, at once.
    job2 = register(h, job.model_copy(update={"priority": 60}))
    res = run(h, job2)
    assert res.plan.annotations["g"].in_place_update == 6
    assert res.plan.node_update == {}
    assert [e for e in res.create_evals if e.triggered_by == TRIGGER_ROLLING_UPDATE] == []
    assert sorted(a.job_version for a in live(h, "sys")) == [1] * 6


# --------------------------------------------------------------------------------------------
# Sysbatch
# --------------------------------------------------------------------------------------------


def test_sysbatch_completed_allocs_are_not_replaced() -> None:
    h = harness(mk_node(0), mk_node(1), mk_node(2))
    job = register(h, sys_job(type="sysbatch"))
    run(h, job)
    done = next(a for a in live(h, "sys") if a.node_id == "n1")
    set_client_status(h, done, ALLOC_CLIENT_COMPLETE)
    res = run(h, job, TRIGGER_NODE_UPDATE, node_id="n1")
    assert res.plan.placements() == []
    assert res.plan.stops() == []
    assert [a.node_id for a in h.state.allocs_by_job("default", "sys") if a.node_id == "n1"] == ["n1"]


def test_sysbatch_new_node_after_completion_still_gets_one() -> None:
    h = harness(mk_node(0))
    job = register(h, sys_job(type="sysbatch"))
    run(h, job)
    set_client_status(h, live(h, "sys")[0], ALLOC_CLIENT_COMPLETE)
    h.state.bump()
    h.state.upsert_node(mk_node(1))
    res = run(h, job, TRIGGER_NODE_UPDATE, node_id="n1")
    assert [a.node_id for a in res.plan.placements()] == ["n1"]


# --------------------------------------------------------------------------------------------
# Preemption
# --------------------------------------------------------------------------------------------


def fill_node_with_service(
    h: Harness, node_id: str, job_id: str, priority: int, cpu: int, mem: int
) -> Allocation:
    """Put a running service alloc of a `priority` job straight into the state."""
    svc = canonicalize(
        Job(
            id=job_id,
            type="service",
            priority=priority,
            task_groups=[TaskGroup(name="web", count=1, tasks=[task(cpu, mem)])],
        )
    )
    if h.state.job("default", job_id) is None:
        register(h, svc)
    h.state.bump()
    a = Allocation(
        id=f"{job_id}-{node_id}",
        name=f"{job_id}.web[0]",
        job_id=job_id,
        task_group="web",
        node_id=node_id,
        resources=Resources(cpu=cpu, memory_mb=mem, disk_mb=0),
        client_status=ALLOC_CLIENT_RUNNING,
        create_index=h.state.index,
        modify_index=h.state.index,
    )
    h.state.upsert_alloc(a)
    return a


def test_system_job_preempts_lower_priority_service_alloc() -> None:
    h = harness(mk_node(0, cpu=1000, mem=1024))
    victim = fill_node_with_service(h, "n0", "svc", 30, 1000, 1024)
    job = register(h, sys_job(priority=50, cpu=500, mem=512))
    res = run(h, job)
    pre = res.plan.node_preemptions.get("n0", [])
    assert [a.id for a in pre] == [victim.id]
    assert pre[0].desired_status == ALLOC_DESIRED_EVICT
    placed = res.plan.placements()
    assert len(placed) == 1
    assert placed[0].preempted_allocations == [victim.id]
    assert pre[0].preempted_by_allocation == placed[0].id
    assert res.plan.annotations["g"].preemptions == 1
    assert res.eval.failed_tg_allocs == {}
    # The plan applier's, not the scheduler's (Nomad's applyPlan): created with the commit.
    assert [e for e in res.create_evals if e.triggered_by == TRIGGER_PREEMPTION] == []
    pevals = [e for e in h.created_evals if e.triggered_by == TRIGGER_PREEMPTION]
    assert [(e.job_id, e.type, e.priority, e.status) for e in pevals] == [("svc", "service", 30, "pending")]
    # Committed: the victim is evicted, the system alloc runs, the node is not over-committed.
    v = h.state.alloc(victim.id)
    assert v is not None and v.desired_status == ALLOC_DESIRED_EVICT and v.terminal_status()
    assert live_nodes(h, "sys") == ["n0"]
    assert h.state.node_usage("n0") == (500, 512, 300)


@pytest.mark.parametrize(
    ("sys_priority", "preempts"),
    [
        pytest.param(39, False, id="delta-9"),
        pytest.param(30, False, id="same-priority"),
        pytest.param(20, False, id="higher-priority-victim"),
        pytest.param(40, True, id="delta-10"),
        pytest.param(45, True, id="delta-15"),
    ],
)
def test_preemption_priority_delta(sys_priority: int, preempts: bool) -> None:
    """Nomad's filterAndGroupPreemptibleAllocs skips allocs with jobPriority - priority < 10."""
    h = harness(mk_node(0, cpu=1000, mem=1024))
    victim = fill_node_with_service(h, "n0", "svc", 30, 1000, 1024)
    job = register(h, sys_job(priority=sys_priority, cpu=500, mem=512))
    res = run(h, job)
    if preempts:
        assert [a.id for a in res.plan.node_preemptions.get("n0", [])] == [victim.id]
        assert live_nodes(h, "sys") == ["n0"]
    else:
        assert res.plan.node_preemptions == {}
        assert res.plan.placements() == []
        m = res.eval.failed_tg_allocs["g"]
        assert m.dimension_exhausted
        assert m.nodes_exhausted == 1
        assert res.eval.queued_allocations == {"g": 1}
        assert [e for e in h.created_evals if e.triggered_by == TRIGGER_PREEMPTION] == []
        v = h.state.alloc(victim.id)
        assert v is not None and not v.terminal_status()


def test_preempts_lowest_priority_first() -> None:
    h = harness(mk_node(0, cpu=1000, mem=1024))
    # Ids sort the higher-priority alloc first, so a naive choice would take it.
    mid = fill_node_with_service(h, "n0", "a-mid", 20, 500, 512)
    low = fill_node_with_service(h, "n0", "b-low", 10, 500, 512)
    job = register(h, sys_job(priority=50, cpu=500, mem=512))
    res = run(h, job)
    assert [a.id for a in res.plan.node_preemptions["n0"]] == [low.id]
    m = h.state.alloc(mid.id)
    assert m is not None and not m.terminal_status()
    pevals = [e.job_id for e in h.created_evals if e.triggered_by == TRIGGER_PREEMPTION]
    assert pevals == ["b-low"]


def test_preempts_several_when_one_is_not_enough() -> None:
    h = harness(mk_node(0, cpu=1000, mem=1024))
    a1 = fill_node_with_service(h, "n0", "s1", 10, 400, 400)
    a2 = fill_node_with_service(h, "n0", "s2", 20, 400, 400)
    fill_node_with_service(h, "n0", "s3", 45, 200, 224)
    job = register(h, sys_job(priority=50, cpu=800, mem=800))
    res = run(h, job)
    assert sorted(a.id for a in res.plan.node_preemptions["n0"]) == sorted([a1.id, a2.id])
    assert sorted(res.plan.placements()[0].preempted_allocations) == sorted([a1.id, a2.id])
    assert sorted(e.job_id for e in h.created_evals if e.triggered_by == TRIGGER_PREEMPTION) == ["s1", "s2"]


def test_one_preemption_eval_per_preempted_job() -> None:
    h = harness(mk_node(0, cpu=1000, mem=1024), mk_node(1, cpu=1000, mem=1024))
    fill_node_with_service(h, "n0", "svc", 20, 1000, 1024)
    fill_node_with_service(h, "n1", "svc", 20, 1000, 1024)
    job = register(h, sys_job(priority=50, cpu=500, mem=512))
    res = run(h, job)
    assert sum(len(v) for v in res.plan.node_preemptions.values()) == 2
    assert [e.job_id for e in h.created_evals if e.triggered_by == TRIGGER_PREEMPTION] == ["svc"]


def test_no_preemption_when_even_all_candidates_are_not_enough() -> None:
    h = harness(mk_node(0, cpu=1000, mem=1024))
    fill_node_with_service(h, "n0", "low", 10, 300, 300)
    fill_node_with_service(h, "n0", "high", 90, 700, 724)
    job = register(h, sys_job(priority=50, cpu=500, mem=512))
    res = run(h, job)
    assert res.plan.node_preemptions == {}
    assert res.plan.placements() == []
    assert res.eval.failed_tg_allocs["g"].dimension_exhausted
    assert [e for e in h.created_evals if e.triggered_by == TRIGGER_PREEMPTION] == []


def test_never_preempts_its_own_job() -> None:
    """A second group of the same job that does not fit must not evict the first group, even
    when the priority lookup would allow it."""
    h = harness(mk_node(0, cpu=1000, mem=1024))
    g1 = TaskGroup(name="a", tasks=[task(800, 800)])
    job = register(h, sys_job(priority=80, groups=[g1]))
    run(h, job)
    assert live_nodes(h, "sys") == ["n0"]
    g2 = TaskGroup(name="b", tasks=[task(800, 800)])
    job2 = register(h, job.model_copy(update={"task_groups": [*job.task_groups, g2]}))
    evaluation = Evaluation(id=eval_id(), job_id="sys", type="system", priority=80)
    # Every alloc looks like priority 1 to the preemptor: only the own-job rule protects them.
    res = SystemScheduler(h.state, evaluation, h.now, job_priority=lambda a: 1).process()
    assert res.plan.node_preemptions == {}
    assert "b" in res.eval.failed_tg_allocs
    # And with the default lookup too.
    res2 = schedule(h.state, Evaluation(id=eval_id(), job_id="sys", type="system", priority=80), h.now)
    assert res2.plan.node_preemptions == {}
    assert job2.version == 1


def test_preemption_disabled() -> None:
    h = harness(mk_node(0, cpu=1000, mem=1024))
    fill_node_with_service(h, "n0", "svc", 10, 1000, 1024)
    job = register(h, sys_job(priority=90, cpu=500, mem=512))
    evaluation = Evaluation(id=eval_id(), job_id="sys", type="system", priority=90)
    res = SystemScheduler(h.state, evaluation, h.now, preemption=False).process()
    assert res.plan.node_preemptions == {}
    assert res.plan.placements() == []
    assert job.priority == 90


def test_preemption_only_on_the_full_node() -> None:
    h = harness(mk_node(0, cpu=1000, mem=1024), mk_node(1, cpu=1000, mem=1024))
    victim = fill_node_with_service(h, "n0", "svc", 10, 1000, 1024)
    job = register(h, sys_job(priority=50, cpu=500, mem=512))
    res = run(h, job)
    assert list(res.plan.node_preemptions) == ["n0"]
    assert [a.id for a in res.plan.node_preemptions["n0"]] == [victim.id]
    by_node = {a.node_id: a for a in res.plan.placements()}
    assert by_node["n1"].preempted_allocations == []
    assert by_node["n0"].preempted_allocations == [victim.id]
