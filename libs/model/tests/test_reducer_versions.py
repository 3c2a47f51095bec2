"""The reducer's part for a job's versions and scaling events: a version marked stable (the
job too when current), scaling events newest first and at most TRACKED_SCALING_EVENTS per
group, gone with a purge; and the scale status computed from a job, its allocs and events."""

from __future__ import annotations

import pytest

from drover.model import Allocation, Job, Task, TaskGroup
from drover.model.events import JobDeregistered, JobRegistered, JobStabilityUpdated, ScalingEventRegistered
from drover.model.reducer import apply
from drover.model.scaling import TRACKED_SCALING_EVENTS, ScalingEvent, scale_status
from drover.model.state import InMemoryState


def _job(version: int, count: int = 3) -> Job:
    tasks = [Task(name="t", driver="mock")]
    groups = [TaskGroup(name="g", count=count, tasks=tasks), TaskGroup(name="h", count=1, tasks=tasks)]
    return Job(id="web", version=version, task_groups=groups)


def _state() -> InMemoryState:
    state = InMemoryState()
    for i, version in enumerate((0, 1, 2)):
        apply(state, 10 + i, JobRegistered(job=_job(version, count=3 + version)))
    return state


def test_stable_marks_an_earlier_version_alone() -> None:
    state = _state()
    apply(state, 20, JobStabilityUpdated(namespace="default", job_id="web", version=1, stable=True))
    v1 = state.job_version("default", "web", 1)
    assert v1 is not None and v1.stable and v1.modify_index == 20 and v1.task_groups[0].count == 4
    job = state.job("default", "web")
    assert job is not None and (job.version, job.stable, job.modify_index) == (2, False, 12)


def test_stable_marks_the_current_version_and_the_job_without_a_new_version() -> None:
    state = _state()
    apply(state, 20, JobStabilityUpdated(namespace="default", job_id="web", version=2, stable=True))
    job = state.job("default", "web")
    assert job is not None and (job.version, job.stable, job.modify_index, job.job_modify_index) == (
        2,
        True,
        20,
        12,
    )
    assert state.job_version("default", "web", 2) == job
    apply(state, 21, JobStabilityUpdated(namespace="default", job_id="web", version=2, stable=False))
    assert not state.job("default", "web").stable  # type: ignore[union-attr]
    # A version that is not there (collected meanwhile) is left alone.
    apply(state, 22, JobStabilityUpdated(namespace="default", job_id="web", version=7, stable=True))
    assert state.job_version("default", "web", 7) is None


def _scaled(count: int | None, group: str = "g") -> ScalingEventRegistered:
    return ScalingEventRegistered(
        namespace="default", job_id="web", task_group=group, event=ScalingEvent(count=count, time=count or 0)
    )


def test_scaling_events_newest_first_a_bounded_number_gone_with_a_purge() -> None:
    state = _state()
    for i in range(TRACKED_SCALING_EVENTS + 3):
        apply(state, 100 + i, _scaled(i))
    apply(state, 200, _scaled(None, "h"))
    events = state.scaling_events("default", "web")
    assert events is not None and events.modify_index == 200
    g = events.scaling_events["g"]
    assert len(g) == TRACKED_SCALING_EVENTS
    assert [e.count for e in g[:3]] == [
        TRACKED_SCALING_EVENTS + 2,
        TRACKED_SCALING_EVENTS + 1,
        TRACKED_SCALING_EVENTS,
    ]
    assert g[0].create_index == 100 + TRACKED_SCALING_EVENTS + 2
    assert [e.count for e in events.scaling_events["h"]] == [None]
    apply(state, 201, JobDeregistered(namespace="default", job_id="web"))  # stopped: kept
    assert state.scaling_events("default", "web") is not None
    apply(state, 202, JobDeregistered(namespace="default", job_id="web", purge=True))
    assert state.scaling_events("default", "web") is None


def _alloc(i: int, group: str = "g", **kw: object) -> Allocation:
    return Allocation.model_validate({"ID": f"a{i}", "JobID": "web", "TaskGroup": group, **kw})


@pytest.mark.parametrize(
    ("allocs", "placed", "running", "healthy", "unhealthy"),
    [
        ([], 0, 0, 0, 0),
        ([_alloc(1, ClientStatus="pending"), _alloc(2, ClientStatus="running")], 2, 1, 0, 0),
        ([_alloc(1, ClientStatus="complete"), _alloc(2, DesiredStatus="stop", ClientStatus="running")], 0, 0, 0, 0),
        (
            [
                _alloc(1, ClientStatus="running", DeploymentStatus={"Healthy": True}),
                _alloc(2, ClientStatus="running", DeploymentStatus={"Healthy": False}),
                _alloc(3, ClientStatus="running", DeploymentStatus={"Healthy": True, "Canary": True}),  # left out
                _alloc(4, group="other", ClientStatus="running"),  # no such group
            ],
            2, 2, 1, 1,
        ),
    ],
)  # fmt: skip
def test_scale_status_counts_live_allocs_but_canaries(
    allocs: list[Allocation], placed: int, running: int, healthy: int, unhealthy: int
) -> None:
    job = _job(2, count=5).model_copy(update={"create_index": 10, "modify_index": 12, "stop": True})
    status = scale_status(job, allocs, None)
    assert (status.job_id, status.job_create_index, status.job_modify_index, status.job_stopped) == (
        "web",
        10,
        12,
        True,
    )
    g = status.task_groups["g"]
    assert (g.desired, g.placed, g.running, g.healthy, g.unhealthy, g.events) == (
        5,
        placed,
        running,
        healthy,
        unhealthy,
        None,
    )
    assert status.task_groups["h"].desired == 1


def test_scale_status_shows_each_group_s_events() -> None:
    state = _state()
    apply(state, 100, _scaled(4))
    status = scale_status(_job(2), [], state.scaling_events("default", "web")).to_api()
    assert [e["Count"] for e in status["TaskGroups"]["g"]["Events"]] == [4]
    assert status["TaskGroups"]["h"]["Events"] is None
    assert set(status) == {
        "JobID",
        "Namespace",
        "JobCreateIndex",
        "JobModifyIndex",
        "JobStopped",
        "TaskGroups",
    }
    assert set(status["TaskGroups"]["g"]) == {
        "Desired",
        "Placed",
        "Running",
        "Healthy",
        "Unhealthy",
        "Events",
    }
