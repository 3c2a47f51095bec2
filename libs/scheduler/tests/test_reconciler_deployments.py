"""Job updates and deployments (Nomad's update block), end to end
through the in-memory Harness: change detection (in-place vs destructive), rolling updates limited
by max_parallel, canaries and promotion, paused / failed / cancelled deployments, and completion.

The deployment watcher is simulated by the tests: `mark_health` sets the allocs' DeploymentStatus
and the deployment's HealthyAllocs / UnhealthyAllocs, then a deployment-watcher eval is processed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from drover.model import (
    Affinity,
    Allocation,
    AllocDeploymentStatus,
    Constraint,
    Deployment,
    DriverInfo,
    Evaluation,
    Job,
    Node,
    NodeCpuResources,
    NodeDiskResources,
    NodeMemoryResources,
    NodeResources,
    ReschedulePolicy,
    Resources,
    Task,
    TaskGroup,
    TaskState,
    UpdateStrategy,
)
from drover.model.canonicalize import canonicalize
from drover.model.deployment import (
    DEPLOYMENT_CANCELLED,
    DEPLOYMENT_FAILED,
    DEPLOYMENT_PAUSED,
    DEPLOYMENT_RUNNING,
    DEPLOYMENT_SUCCESSFUL,
    DESC_NEWER_JOB,
    DESC_RUNNING_NEEDS_PROMOTION,
    DESC_STOPPED_JOB,
    DESC_SUCCESSFUL,
)
from drover.model.durations import SECOND
from drover.model.node import NODE_STATUS_DOWN
from drover.scheduler.harness import Harness
from drover.scheduler.plan import DesiredUpdates, SchedulerResult

ALLOC_UPDATING = "alloc is being updated due to job update"
ALLOC_NOT_NEEDED = "alloc not needed due to job update"

_ids = itertools.count(1)


# --------------------------------------------------------------------------------------------
# builders
# --------------------------------------------------------------------------------------------


def cluster(h: Harness, n: int = 8) -> None:
    for i in range(n):
        h.state.upsert_node(
            Node(
                id=f"n{i}",
                name=f"n{i}",
                datacenter="dc1",
                attributes={"kernel.name": "linux", "unique.hostname": f"n{i}"},
                meta={"rack": f"r{i % 2}"},
                drivers={"mock": DriverInfo(), "raw_exec": DriverInfo()},
                node_resources=NodeResources(
                    cpu=NodeCpuResources(cpu_shares=8000),
                    memory=NodeMemoryResources(memory_mb=16384),
                    disk=NodeDiskResources(disk_mb=200_000),
                ),
            )
        )


def make_job(
    version: int = 0,
    *,
    count: int = 10,
    update: UpdateStrategy | None = None,
    config: dict[str, Any] | None = None,
    **job_kw: Any,
) -> Job:
    tg = TaskGroup(
        name="g",
        count=count,
        tasks=[
            Task(
                name="t",
                driver="mock",
                config=config if config is not None else {"image": "web:1"},
                resources=Resources(cpu=200, memory_mb=128),
            )
        ],
        update=update,
    )
    return canonicalize(
        Job(id="web", type="service", datacenters=["dc1"], task_groups=[tg], version=version, **job_kw)
    )


def new_eval(job: Job, trigger: str = "job-register", **kw: Any) -> Evaluation:
    return Evaluation(
        id=f"ev-{next(_ids):05d}",
        job_id=job.id,
        namespace=job.namespace,
        type=job.type,
        priority=job.priority,
        triggered_by=trigger,
        **kw,
    )


def live(h: Harness) -> list[Allocation]:
    return sorted(
        (a for a in h.state.allocs_by_job("default", "web") if not a.terminal_status()), key=lambda a: a.name
    )


def deployments(h: Harness) -> list[Deployment]:
    return sorted(h.state.deployments.values(), key=lambda d: d.create_index)


def latest(h: Harness) -> Deployment:
    d = h.state.latest_deployment("default", "web")
    assert d is not None
    return d


def mark_health(h: Harness, allocs: list[Allocation], healthy: bool = True) -> None:
    """What the clients and the deployment watcher report: the allocs run and are (un)healthy,
    and the deployment counts them."""
    for a in allocs:
        cur = h.state.alloc(a.id)
        assert cur is not None
        prev_canary = cur.deployment_status.canary if cur.deployment_status else False
        h.state.upsert_alloc(
            cur.model_copy(
                update={
                    "client_status": "running",
                    "task_states": {"t": TaskState(state="running", started_at=h.now)},
                    "deployment_status": AllocDeploymentStatus(
                        healthy=healthy, timestamp=h.now, canary=prev_canary
                    ),
                }
            )
        )
        if cur.deployment_id:
            dep = h.state.deployment(cur.deployment_id)
            assert dep is not None
            dep = dep.model_copy(deep=True)
            st = dep.task_groups[cur.task_group]
            if healthy:
                st.healthy_allocs += 1
            else:
                st.unhealthy_allocs += 1
            h.state.upsert_deployment(dep)
    h.state.bump()


def set_deployment(h: Harness, dep_id: str, **update: Any) -> None:
    dep = h.state.deployment(dep_id)
    assert dep is not None
    h.state.upsert_deployment(dep.model_copy(update=update, deep=True))
    h.state.bump()


def register(h: Harness, job: Job, *, settle: bool = True) -> SchedulerResult:
    """Register `job`; with `settle`, its allocs become healthy and its deployment succeeds."""
    h.state.upsert_job(job)
    res = h.process(new_eval(job))
    if settle:
        mark_health(h, live(h))
        for d in deployments(h):
            if d.active():
                set_deployment(h, d.id, status=DEPLOYMENT_SUCCESSFUL, status_description=DESC_SUCCESSFUL)
    return res


def watcher(h: Harness, job: Job) -> SchedulerResult:
    h.now += 10 * SECOND
    return h.process(new_eval(job, "deployment-watcher", deployment_id=latest(h).id))


def upd(res: SchedulerResult) -> DesiredUpdates:
    return res.plan.annotations["g"]


def new_allocs(res: SchedulerResult, before: set[str]) -> list[Allocation]:
    return sorted((a for a in res.plan.placements() if a.id not in before), key=lambda a: a.name)


def stops(res: SchedulerResult, desc: str | None = None) -> list[Allocation]:
    return sorted(
        (a for a in res.plan.stops() if desc is None or a.desired_description == desc), key=lambda a: a.name
    )


def names(allocs: list[Allocation]) -> list[str]:
    return [a.name for a in allocs]


# --------------------------------------------------------------------------------------------
# change detection
# --------------------------------------------------------------------------------------------


def _with_task(job: Job, **kw: Any) -> Job:
    job.task_groups[0].tasks[0] = job.task_groups[0].tasks[0].model_copy(update=kw)
    return job


def _with_group(job: Job, **kw: Any) -> Job:
    job.task_groups[0] = job.task_groups[0].model_copy(update=kw)
    return job


Mutation = Callable[[Job], Job]

LINUX = Constraint(ltarget="${attr.kernel.name}", rtarget="linux")
RACK_SET = Constraint(ltarget="${meta.rack}", operand="is_set")
NEW_RESCHEDULE = ReschedulePolicy(attempts=0, unlimited=True, delay=60 * SECOND, delay_function="constant")
NEW_UPDATE = UpdateStrategy(
    max_parallel=3,
    health_check="checks",
    min_healthy_time=SECOND,
    healthy_deadline=60 * SECOND,
    progress_deadline=120 * SECOND,
)
SIDECAR = Task(name="side", driver="mock", resources=Resources(cpu=50, memory_mb=32))

IN_PLACE: list[tuple[str, Mutation, int]] = [
    ("count-up", lambda j: _with_group(j, count=12), 2),
    ("group-constraint", lambda j: _with_group(j, constraints=[LINUX]), 0),
    ("job-constraint", lambda j: j.model_copy(update={"constraints": [RACK_SET]}), 0),
    ("affinity", lambda j: _with_group(j, affinities=[Affinity(ltarget="${meta.rack}", rtarget="r1")]), 0),
    ("reschedule-policy", lambda j: _with_group(j, reschedule_policy=NEW_RESCHEDULE), 0),
    ("update-strategy", lambda j: _with_group(j, update=NEW_UPDATE), 0),
]

DESTRUCTIVE: list[tuple[str, Mutation]] = [
    ("config", lambda j: _with_task(j, config={"image": "web:2"})),
    ("env", lambda j: _with_task(j, env={"MODE": "fast"})),
    ("cpu", lambda j: _with_task(j, resources=Resources(cpu=300, memory_mb=128))),
    ("memory", lambda j: _with_task(j, resources=Resources(cpu=200, memory_mb=256))),
    ("driver", lambda j: _with_task(j, driver="raw_exec")),
    ("task-meta", lambda j: _with_task(j, meta={"owner": "team-b"})),
    ("group-meta", lambda j: _with_group(j, meta={"tier": "gold"})),
    ("task-added", lambda j: _with_group(j, tasks=[*j.task_groups[0].tasks, SIDECAR])),
]


@pytest.mark.parametrize(("name", "mutate", "extra"), IN_PLACE, ids=[r[0] for r in IN_PLACE])
def test_in_place_changes(name: str, mutate: Mutation, extra: int) -> None:
    h = Harness()
    cluster(h)
    register(h, make_job(0))
    before = {a.id: a for a in live(h)}
    job1 = canonicalize(mutate(make_job(1)))
    assert job1.version == 1
    h.state.upsert_job(job1)

    res = h.process(new_eval(job1))

    u = upd(res)
    assert (u.in_place_update, u.destructive_update, u.place, u.stop) == (10, 0, extra, 0), name
    assert stops(res) == []
    after = live(h)
    assert len(after) == 10 + extra
    # The same allocs, now at version 1.
    assert {a.id for a in after} >= set(before)
    assert all(a.job_version == 1 for a in after)
    for a in after:
        if a.id in before:
            assert a.node_id == before[a.id].node_id
            assert a.name == before[a.id].name
    # The deployment of version 1 takes the allocs updated in place, their health to be judged
    # again, and counts them placed (Nomad's computeJobAllocs and updateDeploymentWithAlloc).
    (created,) = [d for d in deployments(h) if d.job_version == 1]
    assert all(a.deployment_id == created.id for a in after), name
    assert all(a.deployment_status is None for a in after if a.id in before), name
    assert created.task_groups["g"].placed_allocs == 10 + extra, name


@pytest.mark.parametrize(("name", "mutate"), DESTRUCTIVE, ids=[r[0] for r in DESTRUCTIVE])
def test_destructive_changes(name: str, mutate: Mutation) -> None:
    """canonicalize gives a service job Nomad's default update block: max_parallel 1."""
    h = Harness()
    cluster(h)
    register(h, make_job(0))
    before = set(h.state.allocs)
    job1 = canonicalize(mutate(make_job(1)))
    h.state.upsert_job(job1)

    res = h.process(new_eval(job1))

    u = upd(res)
    assert (u.destructive_update, u.ignore, u.in_place_update, u.place) == (1, 9, 0, 0), name
    (stopped,) = stops(res)
    assert stopped.desired_description == ALLOC_UPDATING
    (new,) = new_allocs(res, before)
    assert new.name == stopped.name == "web.g[0]"  # name order: the lowest index goes first
    assert new.job_version == 1
    assert new.id != stopped.id
    assert sum(1 for a in live(h) if a.job_version == 0) == 9


# --------------------------------------------------------------------------------------------
# rolling destructive updates
# --------------------------------------------------------------------------------------------


def rolling_job(version: int, mp: int = 4, image: str = "web:1", **kw: Any) -> Job:
    return make_job(
        version,
        update=UpdateStrategy(
            max_parallel=mp,
            min_healthy_time=10 * SECOND,
            healthy_deadline=5 * 60 * SECOND,
            progress_deadline=10 * 60 * SECOND,
            **kw,
        ),
        config={"image": image},
    )


def start_rollout(h: Harness, mp: int = 4, **kw: Any) -> tuple[Job, SchedulerResult, set[str]]:
    """v0 settled, then v1 (a new image) registered: the first step of the rollout."""
    cluster(h)
    register(h, rolling_job(0, mp, **kw))
    job1 = rolling_job(1, mp, image="web:2", **kw)
    h.state.upsert_job(job1)
    before = set(h.state.allocs)
    res = h.process(new_eval(job1))
    return job1, res, before


@pytest.mark.parametrize(("mp", "first_step"), [(1, 1), (2, 2), (4, 4), (10, 10), (15, 10)])
def test_destructive_update_respects_max_parallel(mp: int, first_step: int) -> None:
    h = Harness()
    _job1, res, before = start_rollout(h, mp)

    u = upd(res)
    assert (u.destructive_update, u.ignore, u.place, u.in_place_update) == (first_step, 10 - first_step, 0, 0)
    assert res.plan.deployment is not None, "the update creates a deployment"
    dep = latest(h)
    assert dep.id == res.plan.deployment.id
    assert dep.job_version == 1
    assert dep.status == DEPLOYMENT_RUNNING
    assert dep.task_groups["g"].desired_total == 10
    new = new_allocs(res, before)
    assert len(new) == first_step
    assert all(a.deployment_id == dep.id for a in new)
    assert all(a.job_version == 1 for a in new)
    stopped = stops(res, ALLOC_UPDATING)
    assert names(stopped) == names(new)  # each new alloc takes the name of the one it replaces
    assert names(new) == sorted(names(new), key=lambda n: int(n[n.index("[") + 1 : -1]))


def test_rollout_proceeds_as_allocs_become_healthy() -> None:
    h = Harness()
    job1, res, before = start_rollout(h, 4)
    steps = [upd(res).destructive_update]
    new = new_allocs(res, before)
    for _ in range(5):
        mark_health(h, new)
        before = set(h.state.allocs)
        res = watcher(h, job1)
        new = new_allocs(res, before)
        steps.append(upd(res).destructive_update)
        if not new:
            break
    assert steps == [4, 4, 2, 0]
    after = live(h)
    assert len(after) == 10
    assert all(a.job_version == 1 for a in after)
    assert sorted(a.index() for a in after) == list(range(10))
    # Nothing left to do and every alloc healthy: the deployment succeeded.
    assert latest(h).status == DEPLOYMENT_SUCCESSFUL
    assert latest(h).status_description == DESC_SUCCESSFUL


@pytest.mark.parametrize("n_healthy", [0, 1, 2, 3, 4])
def test_each_healthy_alloc_frees_one_slot(n_healthy: int) -> None:
    h = Harness()
    job1, res, before = start_rollout(h, 4)
    new = new_allocs(res, before)
    mark_health(h, new[:n_healthy])  # the rest have not reported health yet
    before = set(h.state.allocs)

    res = watcher(h, job1)

    assert upd(res).destructive_update == n_healthy
    assert len(new_allocs(res, before)) == n_healthy


@pytest.mark.parametrize("n_healthy", [0, 3])
def test_unhealthy_alloc_halts_rollout(n_healthy: int) -> None:
    h = Harness()
    job1, res, before = start_rollout(h, 4)
    new = new_allocs(res, before)
    mark_health(h, new[:n_healthy])
    mark_health(h, [new[3]], healthy=False)
    before = set(h.state.allocs)

    res = watcher(h, job1)

    assert upd(res).destructive_update == 0
    assert new_allocs(res, before) == []
    assert stops(res) == []


# --------------------------------------------------------------------------------------------
# canaries
# --------------------------------------------------------------------------------------------


def start_canary(h: Harness) -> tuple[Job, SchedulerResult, set[str]]:
    return start_rollout(h, 2, canary=2)


def test_canaries_are_placed_first_and_require_promotion() -> None:
    h = Harness()
    _job1, res, before = start_canary(h)

    u = upd(res)
    assert (u.canary, u.ignore, u.destructive_update, u.place, u.stop) == (2, 10, 0, 0, 0)
    canaries = new_allocs(res, before)
    assert len(canaries) == 2
    assert all(c.deployment_status is not None and c.deployment_status.canary for c in canaries)
    # Canary names reuse the indexes of the allocs being replaced, lowest first.
    assert names(canaries) == ["web.g[0]", "web.g[1]"]
    assert stops(res) == []
    assert len(live(h)) == 12
    dep = latest(h)
    assert dep.job_version == 1
    st = dep.task_groups["g"]
    assert st.desired_canaries == 2
    assert st.desired_total == 10
    assert sorted(st.placed_canaries) == sorted(c.id for c in canaries)
    assert not st.promoted
    assert dep.requires_promotion()
    assert dep.status == DEPLOYMENT_RUNNING
    assert dep.status_description == DESC_RUNNING_NEEDS_PROMOTION
    assert all(c.deployment_id == dep.id for c in canaries)


def test_healthy_canaries_wait_for_promotion() -> None:
    h = Harness()
    job1, res, before = start_canary(h)
    mark_health(h, new_allocs(res, before))
    before = set(h.state.allocs)

    res = watcher(h, job1)

    assert new_allocs(res, before) == []
    assert stops(res) == []
    u = upd(res)
    assert (u.canary, u.destructive_update, u.place) == (0, 0, 0)
    assert latest(h).status == DEPLOYMENT_RUNNING


def test_promotion_stops_the_allocs_the_canaries_replace_first() -> None:
    h = Harness()
    job1, res, before = start_canary(h)
    canaries = new_allocs(res, before)
    mark_health(h, canaries)
    dep = latest(h)
    tgs = {k: v.model_copy(update={"promoted": True}) for k, v in dep.task_groups.items()}
    set_deployment(h, dep.id, task_groups=tgs)
    before = set(h.state.allocs)

    res = watcher(h, job1)

    not_needed = stops(res, ALLOC_NOT_NEEDED)
    assert names(not_needed) == names(canaries)
    assert all(a.job_version == 0 for a in not_needed)
    u = upd(res)
    assert u.canary == 0
    assert u.destructive_update == 2  # max_parallel 2, the canaries are healthy
    assert u.stop == 2
    new = new_allocs(res, before)
    assert names(new) == ["web.g[2]", "web.g[3]"]
    assert all(not (a.deployment_status and a.deployment_status.canary) for a in new)
    assert len(live(h)) == 10
    # The canaries themselves are kept.
    assert {c.id for c in canaries} <= {a.id for a in live(h)}


def test_promoted_canary_rollout_completes() -> None:
    h = Harness()
    job1, res, before = start_canary(h)
    new = new_allocs(res, before)
    mark_health(h, new)
    dep = latest(h)
    set_deployment(
        h,
        dep.id,
        task_groups={k: v.model_copy(update={"promoted": True}) for k, v in dep.task_groups.items()},
    )
    for _ in range(8):
        before = set(h.state.allocs)
        res = watcher(h, job1)
        new = new_allocs(res, before)
        if not new:
            break
        mark_health(h, new)
    after = live(h)
    assert len(after) == 10
    assert all(a.job_version == 1 for a in after)
    assert sorted(a.index() for a in after) == list(range(10))
    assert latest(h).status == DEPLOYMENT_SUCCESSFUL


# --------------------------------------------------------------------------------------------
# paused, failed, cancelled
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "next_step"), [(DEPLOYMENT_RUNNING, 4), (DEPLOYMENT_PAUSED, 0), (DEPLOYMENT_FAILED, 0)]
)
def test_paused_or_failed_deployment_places_no_destructive_updates(status: str, next_step: int) -> None:
    h = Harness()
    job1, res, before = start_rollout(h, 4)
    mark_health(h, new_allocs(res, before))
    set_deployment(h, latest(h).id, status=status)
    before = set(h.state.allocs)

    res = h.process(new_eval(job1, "job-register"))

    assert upd(res).destructive_update == next_step
    assert len(new_allocs(res, before)) == next_step
    assert len(stops(res, ALLOC_UPDATING)) == next_step


def test_unpausing_resumes_the_rollout() -> None:
    h = Harness()
    job1, res, before = start_rollout(h, 4)
    mark_health(h, new_allocs(res, before))
    dep_id = latest(h).id
    set_deployment(h, dep_id, status=DEPLOYMENT_PAUSED)
    assert upd(watcher(h, job1)).destructive_update == 0
    set_deployment(h, dep_id, status=DEPLOYMENT_RUNNING)
    assert upd(watcher(h, job1)).destructive_update == 4


@pytest.mark.parametrize("status", [DEPLOYMENT_FAILED, DEPLOYMENT_PAUSED])
def test_lost_allocs_are_replaced_even_when_deployment_not_progressing(status: str) -> None:
    h = Harness()
    job1, res, before = start_rollout(h, 4)
    set_deployment(h, latest(h).id, status=status)
    # A node holding an old (v0) alloc goes down.
    victim = next(a for a in live(h) if a.job_version == 0)
    node_id = victim.node_id
    on_node = [a for a in live(h) if a.node_id == node_id]
    node = h.state.node(node_id)
    assert node is not None
    h.state.upsert_node(node.model_copy(update={"status": NODE_STATUS_DOWN}))
    h.state.bump()
    before = set(h.state.allocs)

    res = h.process(new_eval(job1, "node-update", node_id=node_id))

    lost_stops = [a for a in stops(res) if a.client_status == "lost"]
    assert sorted(a.id for a in lost_stops) == sorted(a.id for a in on_node)
    new = new_allocs(res, before)
    assert len(new) == len(on_node)
    assert sorted(a.previous_allocation for a in new) == sorted(a.id for a in on_node)
    assert all(a.node_id != node_id for a in new)
    assert upd(res).place == len(on_node)
    assert upd(res).destructive_update == 0
    assert len(live(h)) == 10 + 4 - 4  # still the full count (4 old stopped by the first step)


def test_newer_version_cancels_active_deployment() -> None:
    h = Harness()
    start_rollout(h, 4)
    d1 = latest(h)
    assert d1.status == DEPLOYMENT_RUNNING
    job2 = rolling_job(2, 4, image="web:3")
    h.state.upsert_job(job2)

    res = h.process(new_eval(job2))

    assert any(
        u.deployment_id == d1.id
        and u.status == DEPLOYMENT_CANCELLED
        and u.status_description == DESC_NEWER_JOB
        for u in res.plan.deployment_updates
    )
    old = h.state.deployment(d1.id)
    assert old is not None
    assert (old.status, old.status_description) == (DEPLOYMENT_CANCELLED, DESC_NEWER_JOB)
    d2 = latest(h)
    assert d2.id != d1.id
    assert d2.job_version == 2
    assert d2.active()


def test_stopping_the_job_cancels_deployment_and_stops_everything() -> None:
    h = Harness()
    job1, _res, _before = start_rollout(h, 4)
    d1 = latest(h)
    n_live = len(live(h))
    assert n_live == 10
    stopped_job = job1.model_copy(update={"stop": True, "version": 2})
    h.state.upsert_job(stopped_job)

    res = h.process(new_eval(stopped_job, "job-deregister"))

    assert [(u.deployment_id, u.status, u.status_description) for u in res.plan.deployment_updates] == [
        (d1.id, DEPLOYMENT_CANCELLED, DESC_STOPPED_JOB)
    ]
    assert live(h) == []
    assert len(stops(res)) == n_live
    assert upd(res).stop == n_live
    assert res.plan.placements() == []
    dep = h.state.deployment(d1.id)
    assert dep is not None and dep.status == DEPLOYMENT_CANCELLED


def test_stopping_a_job_without_deployment_updates_nothing_else() -> None:
    h = Harness()
    cluster(h)
    job0 = make_job(0)
    register(h, job0)  # its deployment already succeeded
    stopped_job = job0.model_copy(update={"stop": True, "version": 1})
    h.state.upsert_job(stopped_job)
    res = h.process(new_eval(stopped_job, "job-deregister"))
    assert res.plan.deployment_updates == []
    assert live(h) == []


# --------------------------------------------------------------------------------------------
# completion
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n_healthy", "successful"), [(0, False), (5, False), (9, False), (10, True)])
def test_initial_deployment_succeeds_when_every_alloc_is_healthy(n_healthy: int, successful: bool) -> None:
    h = Harness()
    cluster(h)
    job0 = make_job(0)
    res = register(h, job0, settle=False)
    dep = latest(h)
    assert dep.status == DEPLOYMENT_RUNNING
    assert dep.task_groups["g"].desired_total == 10
    assert all(a.deployment_id == dep.id for a in new_allocs(res, set()))
    mark_health(h, live(h)[:n_healthy])

    res = watcher(h, job0)

    assert res.plan.placements() == []
    ups = [(u.deployment_id, u.status, u.status_description) for u in res.plan.deployment_updates]
    if successful:
        assert ups == [(dep.id, DEPLOYMENT_SUCCESSFUL, DESC_SUCCESSFUL)]
        assert latest(h).status == DEPLOYMENT_SUCCESSFUL
    else:
        assert ups == []
        assert latest(h).status == DEPLOYMENT_RUNNING


def test_successful_deployment_is_not_reopened() -> None:
    h = Harness()
    cluster(h)
    job0 = make_job(0)
    register(h, job0)
    n_deps = len(h.state.deployments)
    res = h.process(new_eval(job0, "job-register"))
    assert res.plan.is_noop()
    assert len(h.state.deployments) == n_deps


@pytest.mark.parametrize(("job_type", "has_deployment"), [("service", True), ("batch", False)])
def test_only_jobs_with_an_update_block_get_deployments(job_type: str, has_deployment: bool) -> None:
    """canonicalize gives service jobs the default update block; batch jobs have none."""
    h = Harness()
    cluster(h)
    job = make_job(0).model_copy(update={"type": job_type})
    job = canonicalize(
        job.model_copy(
            update={"task_groups": [job.task_groups[0].model_copy(update={"update": None})], "update": None}
        )
    )
    assert (job.task_groups[0].update is not None) is has_deployment
    res = register(h, job, settle=False)
    assert len(new_allocs(res, set())) == 10
    assert (res.plan.deployment is not None) is has_deployment
    assert bool(h.state.deployments) is has_deployment
    assert all(bool(a.deployment_id) is has_deployment for a in live(h))
