"""The deployment watcher's decisions (drover.control.leader.deploymentwatcher), table-driven: evals for
newly healthy allocs, replacements for unhealthy ones in progress-based groups, failing early
(no progress deadline, or no reschedule left), the progress deadline, auto-promotion."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from drover.control.leader.deploymentwatcher import (
    DESC_FAILED_ALLOCS,
    DESC_PROGRESS_DEADLINE,
    done_groups,
    progress_cutoff,
    promotion_problems,
    reschedule_eligible,
    rollback,
    watch_deployment,
)
from drover.model import (
    Allocation,
    AllocDeploymentStatus,
    Deployment,
    Job,
    ReschedulePolicy,
    RescheduleTracker,
    Task,
    TaskGroup,
    UpdateStrategy,
)
from drover.model.alloc import RescheduleEvent
from drover.model.deployment import DEPLOYMENT_PAUSED, DEPLOYMENT_SUCCESSFUL, DeploymentState
from drover.model.durations import SECOND as S

NOW = 1_000_000 * S
ONE_ATTEMPT = ReschedulePolicy(attempts=1, interval=3600 * S, delay=5 * S, delay_function="constant")


def job(policy: ReschedulePolicy | None = ONE_ATTEMPT, auto_revert: bool = False) -> Job:
    upd = UpdateStrategy(max_parallel=1, auto_revert=auto_revert, progress_deadline=600 * S)
    tg = TaskGroup(
        name="g", count=2, tasks=[Task(name="t", driver="mock")], update=upd, reschedule_policy=policy
    )
    return Job(id="j", type="service", task_groups=[tg], update=upd)


def alloc(
    name: str, healthy: bool | None, *, mod: int = 5, resched: bool = False, canary: bool = False,
    events: int = 0, stopped: bool = False,
) -> Allocation:  # fmt: skip
    a = Allocation(
        id=name, job_id="j", task_group="g", deployment_id="d1", client_status="running",
        deployment_status=AllocDeploymentStatus(healthy=healthy, modify_index=mod, canary=canary),
    )  # fmt: skip
    if resched:
        a.desired_transition.reschedule = True
    if events:
        a.reschedule_tracker = RescheduleTracker(
            events=[RescheduleEvent(reschedule_time=NOW - 10 * S, delay=5 * S) for _ in range(events)]
        )
    if stopped:
        a.desired_status = "stop"
    return a


def dep(
    *, deadline: int = 600 * S, require_by: int = NOW + 60 * S, healthy: int = 0, total: int = 2,
    canaries: int = 0, placed_canaries: list[str] | None = None, promoted: bool = False,
    auto_promote: bool = False, auto_revert: bool = False, status: str = "running",
) -> Deployment:  # fmt: skip
    st = DeploymentState(
        progress_deadline=deadline, require_progress_by=require_by, healthy_allocs=healthy,
        desired_total=total, desired_canaries=canaries, placed_canaries=placed_canaries or [],
        promoted=promoted, auto_promote=auto_promote, auto_revert=auto_revert,
    )  # fmt: skip
    return Deployment(id="d1", job_id="j", task_groups={"g": st}, status=status)


@dataclass
class Case:
    name: str
    d: Deployment
    allocs: list[Allocation]
    job: Job = field(default_factory=job)
    now: int = NOW
    last_eval: int = 0
    create_eval: bool = False
    replace: list[str] = field(default_factory=list)
    fail: str = ""
    rollback: bool = False
    promote: bool = False


CASES = [
    Case("nothing known yet", dep(), [alloc("a", None), alloc("b", None)]),
    Case(
        "an alloc turned healthy: an eval",
        dep(healthy=1),
        [alloc("a", True), alloc("b", None)],
        create_eval=True,
    ),
    Case("healthy before the last eval: nothing", dep(healthy=1), [alloc("a", True, mod=5)], last_eval=7),
    Case("unhealthy, progress-based: replaced", dep(), [alloc("a", False), alloc("b", None)], replace=["a"]),
    Case("already marked for reschedule: not again", dep(), [alloc("a", False, resched=True)]),
    Case(
        "unhealthy, no progress deadline: failed",
        dep(deadline=0),
        [alloc("a", False)],
        fail=DESC_FAILED_ALLOCS,
    ),
    Case(
        "unhealthy, no reschedule left: failed early",
        dep(),
        [alloc("a", False, events=1)],
        fail=DESC_FAILED_ALLOCS,
    ),
    Case(
        "unhealthy, unlimited reschedules: replaced",
        dep(),
        [alloc("a", False, events=9)],
        job=job(ReschedulePolicy(unlimited=True, delay=5 * S, delay_function="exponential")),
        replace=["a"],
    ),
    Case(
        "failed early with auto_revert: roll back",
        dep(deadline=0, auto_revert=True),
        [alloc("a", False)],
        fail=DESC_FAILED_ALLOCS,
        rollback=True,
    ),
    Case(
        "progress deadline passed, short of healthy: failed",
        dep(require_by=NOW - 1, healthy=1),
        [alloc("a", True, mod=1), alloc("b", None)],
        last_eval=9,
        fail=DESC_PROGRESS_DEADLINE,
    ),
    Case(
        "progress deadline passed but the group is done: nothing",
        dep(require_by=NOW - 1, healthy=2),
        [alloc("a", True, mod=1), alloc("b", True, mod=1)],
        last_eval=9,
    ),
    Case("paused: nothing", dep(status=DEPLOYMENT_PAUSED, deadline=0), [alloc("a", False)]),
    Case("not active: nothing", dep(status=DEPLOYMENT_SUCCESSFUL, deadline=0), [alloc("a", False)]),
    Case(
        "canaries healthy, auto_promote: promoted",
        dep(canaries=1, placed_canaries=["c"], auto_promote=True, healthy=1),
        [alloc("c", True, canary=True, mod=3), alloc("a", None)],
        last_eval=4,
        promote=True,
    ),
    Case(
        "canaries healthy, no auto_promote: waits for the operator",
        dep(canaries=1, placed_canaries=["c"], healthy=1),
        [alloc("c", True, canary=True, mod=3)],
        last_eval=4,
    ),
    Case(
        "a canary not yet healthy: not promoted",
        dep(canaries=2, placed_canaries=["c", "e"], auto_promote=True, healthy=1),
        [alloc("c", True, canary=True, mod=3), alloc("e", None, canary=True)],
        last_eval=4,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_watch_deployment(case: Case) -> None:
    res = watch_deployment(case.d, case.allocs, case.job, case.now, case.last_eval)
    assert res.create_eval == case.create_eval
    assert res.allow_replacements == case.replace
    assert res.fail == bool(case.fail) and res.description == case.fail
    assert res.rollback == case.rollback
    assert res.promote == case.promote


def test_the_progress_cutoff_skips_done_groups_and_stopped_allocs() -> None:
    d = dep(require_by=NOW + 5, total=1)
    assert progress_cutoff(d, [alloc("a", None)]) == NOW + 5
    assert progress_cutoff(d, [alloc("a", True)]) == 0  # done: no deadline to keep
    assert done_groups(d, [alloc("a", True, stopped=True)]) == {"g": False}  # a stopped alloc counts not


@pytest.mark.parametrize(
    ("policy", "events", "eligible"),
    [
        (None, 0, False),
        (ReschedulePolicy(attempts=0), 0, False),
        (ONE_ATTEMPT, 0, True),
        (ONE_ATTEMPT, 1, False),
        (ReschedulePolicy(attempts=2, interval=3600 * S), 1, True),
        (ReschedulePolicy(unlimited=True), 50, True),
    ],
)
def test_reschedule_eligible(policy: ReschedulePolicy | None, events: int, eligible: bool) -> None:
    assert reschedule_eligible(alloc("a", False, events=events), policy, NOW) is eligible


def test_promotion_needs_an_active_deployment_with_healthy_canaries() -> None:
    d = dep(canaries=1, placed_canaries=["c"])
    assert promotion_problems(d, [alloc("c", None, canary=True)], [], True) == [
        "Task group 'g' has 0/1 healthy allocations"
    ]
    assert promotion_problems(d, [alloc("c", True, canary=True)], [], True) == []
    assert promotion_problems(d, [alloc("c", True, canary=True)], ["nope"], False) == [
        "Deployment 'd1' has no task group 'nope'"
    ]
    assert promotion_problems(dep(), [], [], True) == ["Deployment has no canaries to promote"]
    done = dep(status=DEPLOYMENT_SUCCESSFUL, canaries=1)
    assert promotion_problems(done, [], [], True) == ["Deployment 'd1' has terminal status 'successful'"]


def test_rollback_goes_to_the_latest_stable_version_with_another_spec() -> None:
    v0, v1 = job(), job()
    v0.version, v0.stable = 0, True
    v1.version, v1.stable = 1, True
    v1.meta = {"x": "1"}
    current = job()
    current.version, current.meta = 2, {"x": "2"}
    desc, revert = rollback(current, [v0, v1, current], "Failed", NOW)
    assert desc == "Failed - rolling back to job version 1"
    assert revert is not None and (revert.version, revert.stable, revert.meta) == (3, False, {"x": "1"})
    same = job()
    same.version, same.meta = 2, {"x": "1"}
    desc, revert = rollback(same, [v0, v1, same], "Failed", NOW)
    assert revert is None and "current job has same specification" in desc
    desc, revert = rollback(current, [current], "Failed", NOW)
    assert revert is None and desc == "Failed - no stable job version to auto revert to"
