"""The reducer's deployment bookkeeping (Nomad's updateDeploymentWithAlloc): placements start the
progress deadline, client-reported health moves the healthy / unhealthy counts once per alloc and
pushes the deadline on; the deployment watcher's updates fail or promote; an operator's restart
request is kept on the alloc through later plans."""

from __future__ import annotations

from drover.model import Allocation, AllocDeploymentStatus, Deployment, Job
from drover.model.alloc import AllocRestartRequest
from drover.model.deployment import DeploymentState
from drover.model.durations import SECOND as S
from drover.model.events import (
    AllocClientUpdate,
    AllocRestartRequested,
    AllocsClientUpdated,
    DeploymentUpdated,
    JobRegistered,
    PlanApplied,
)
from drover.model.reducer import apply
from drover.model.state import InMemoryState

T0 = 1_000 * S


def setup() -> InMemoryState:
    state = InMemoryState()
    d = Deployment(
        id="d1",
        job_id="j",
        task_groups={"g": DeploymentState(progress_deadline=600 * S, desired_total=2, desired_canaries=1)},
    )
    allocs = [
        Allocation(id=i, job_id="j", task_group="g", deployment_id="d1", deployment_status=AllocDeploymentStatus(canary=i == "a"))
        for i in ("a", "b")
    ]  # fmt: skip
    apply(state, 1, PlanApplied(eval_id="e", job_id="j", allocs=allocs, deployment=d, at=T0))
    return state


def report(state: InMemoryState, position: int, alloc_id: str, healthy: bool | None, at: int) -> None:
    ds = AllocDeploymentStatus(healthy=healthy, timestamp=at)
    update = AllocClientUpdate(id=alloc_id, client_status="running", deployment_status=ds)
    apply(state, position, AllocsClientUpdated(updates=[update]))


def group(state: InMemoryState) -> DeploymentState:
    d = state.deployment("d1")
    assert d is not None
    return d.task_groups["g"]


def test_placements_start_the_progress_deadline() -> None:
    state = setup()
    assert group(state).placed_allocs == 2
    assert group(state).require_progress_by == T0 + 600 * S


def test_health_counts_once_per_alloc_and_pushes_the_deadline() -> None:
    state = setup()
    report(state, 2, "a", None, T0 + S)  # no health news yet
    assert (group(state).healthy_allocs, group(state).unhealthy_allocs) == (0, 0)
    report(state, 3, "a", True, T0 + 700 * S)
    report(state, 4, "a", True, T0 + 800 * S)  # said again: counted once
    assert group(state).healthy_allocs == 1
    assert group(state).require_progress_by == T0 + 1300 * S
    a = state.alloc("a")
    assert a is not None and a.deployment_status is not None
    assert a.deployment_status.modify_index == 3 and a.deployment_status.canary  # canary is the server's
    report(state, 5, "b", False, T0 + 2 * S)
    report(state, 6, "b", True, T0 + 3 * S)  # once unhealthy, it stays so
    assert (group(state).healthy_allocs, group(state).unhealthy_allocs) == (1, 1)
    b = state.alloc("b")
    assert b is not None and b.deployment_status is not None and b.deployment_status.healthy is False
    report(state, 7, "a", False, T0 + 4 * S)  # healthy, then unhealthy
    assert (group(state).healthy_allocs, group(state).unhealthy_allocs) == (0, 2)


def test_the_watchers_updates_fail_or_promote() -> None:
    state = setup()
    apply(
        state,
        2,
        DeploymentUpdated(deployment_id="d1", promote=True, status_description="Deployment is running"),
    )
    assert group(state).promoted
    apply(
        state, 3, DeploymentUpdated(deployment_id="d1", status="failed", status_description="Failed due to x")
    )
    d = state.deployment("d1")
    assert d is not None and (d.status, d.status_description, d.modify_index) == (
        "failed",
        "Failed due to x",
        3,
    )


def test_a_restart_request_survives_a_later_plan() -> None:
    state = setup()
    req = AllocRestartRequest(id="r1", task_name="t")
    apply(state, 2, AllocRestartRequested(alloc_id="a", request=req))
    stale = Allocation(id="a", job_id="j", task_group="g", deployment_id="d1", desired_status="stop")
    apply(state, 3, PlanApplied(eval_id="e2", job_id="j", stopped=[stale]))
    a = state.alloc("a")
    assert a is not None and a.restart_request == req and a.desired_status == "stop"


def test_a_successful_deployment_makes_its_job_version_stable() -> None:
    state = InMemoryState()
    apply(state, 1, JobRegistered(job=Job(id="j", version=0)))
    d = Deployment(id="d1", job_id="j", job_version=0, task_groups={"g": DeploymentState(desired_total=1)})
    apply(state, 2, PlanApplied(eval_id="e", job_id="j", deployment=d))
    job = state.job("default", "j")
    assert job is not None and not job.stable
    done = {
        "DeploymentID": "d1",
        "Status": "successful",
        "StatusDescription": "Deployment completed successfully",
    }
    apply(state, 3, PlanApplied(eval_id="e2", job_id="j", deployment_updates=[done]))
    job = state.job("default", "j")
    assert job is not None and job.stable and state.job_versions[("default", "j")][0].stable
    apply(state, 4, JobRegistered(job=Job(id="j", version=0)))  # the same version again: still stable
    job = state.job("default", "j")
    assert job is not None and job.stable
