"""Operator commands on deployments: promote, pause and resume, fail (with auto-revert)."""

from __future__ import annotations

import pytest

from drover.control.commands import deployments
from drover.control.errors import Invalid, NotFound
from drover.model import AllocDeploymentStatus, Deployment, DeploymentState
from drover.model.events import DeploymentUpdated, JobRegistered

from .conftest import NOW, Cluster, alloc, job


def _deployment(status: str = "running", canaries: int = 1, placed: list[str] | None = None,
                auto_revert: bool = False) -> Deployment:  # fmt: skip
    state = DeploymentState(desired_canaries=canaries, desired_total=3, placed_canaries=placed or [],
                            auto_revert=auto_revert)  # fmt: skip
    return Deployment(id="d1", job_id="web", job_version=1, status=status, task_groups={"g": state})


def _with(cluster: Cluster, dep: Deployment, healthy: bool | None = None) -> Cluster:
    web = job(version=1)
    cluster.add(web)
    cluster.state.upsert_deployment(dep)
    status = AllocDeploymentStatus(healthy=healthy) if healthy is not None else None
    cluster.add(alloc("c1", web, deployment_id="d1", deployment_status=status, client_status="running"))
    return cluster


@pytest.mark.parametrize(
    ("dep", "healthy", "groups", "all_groups", "refusal"),
    [
        (_deployment(), True, [], False, "Promote needs All true or the Groups to promote"),
        (
            _deployment(status="successful"),
            True,
            [],
            True,
            "Deployment 'd1' has terminal status 'successful'",
        ),
        (_deployment(canaries=0), True, [], True, "Deployment has no canaries to promote"),
        (_deployment(placed=["c1"]), False, [], True, "Task group 'g' has 0/1 healthy allocations"),
        (_deployment(placed=["c1"]), True, ["nope"], False, "Deployment 'd1' has no task group 'nope'"),
    ],
)
def test_promote_refused(cluster: Cluster, dep: Deployment, healthy: bool, groups: list[str], all_groups: bool,
                         refusal: str) -> None:  # fmt: skip
    _with(cluster, dep, healthy)
    with pytest.raises(Invalid) as e:
        deployments.promote(cluster.reads, "d1", groups, all_groups, NOW)
    assert e.value.message == refusal


@pytest.mark.parametrize(("groups", "all_groups", "promote_groups"), [([], True, []), (["g"], False, ["g"])])
def test_promote_healthy_canaries(
    cluster: Cluster, groups: list[str], all_groups: bool, promote_groups: list[str]
) -> None:
    _with(cluster, _deployment(placed=["c1"]), healthy=True)
    change = deployments.promote(cluster.reads, "d1", groups, all_groups, NOW)
    (event,) = (e.event for e in change.events)
    assert isinstance(event, DeploymentUpdated) and event.promote and event.promote_groups == promote_groups
    assert [e.triggered_by for e in event.evals] == ["deployment-watcher"] and change.eval_ids == [
        event.evals[0].id
    ]


def test_unknown_deployment_or_job(cluster: Cluster) -> None:
    with pytest.raises(NotFound, match="deployment not found"):
        deployments.fail(cluster.reads, "d1", NOW)
    cluster.state.upsert_deployment(_deployment())
    with pytest.raises(NotFound, match="job not found"):
        deployments.pause(cluster.reads, "d1", True, NOW)


@pytest.mark.parametrize(
    ("paused", "status", "description", "evals"),
    [
        (True, "paused", "Deployment is paused", 0),
        (False, "running", "Deployment is running but requires manual promotion", 1),
    ],
)
def test_pause_and_resume(cluster: Cluster, paused: bool, status: str, description: str, evals: int) -> None:
    _with(cluster, _deployment(status="paused" if not paused else "running"))
    change = deployments.pause(cluster.reads, "d1", paused, NOW)
    (event,) = (e.event for e in change.events)
    assert isinstance(event, DeploymentUpdated)
    assert (event.status, event.status_description, len(event.evals), len(change.evals)) == (
        status,
        description,
        evals,
        evals,
    )


@pytest.mark.parametrize("command", ["pause", "resume", "fail"])
def test_a_terminal_deployment_is_left_alone(cluster: Cluster, command: str) -> None:
    _with(cluster, _deployment(status="failed"))
    with pytest.raises(Invalid, match="terminal deployment"):
        if command == "fail":
            deployments.fail(cluster.reads, "d1", NOW)
        else:
            deployments.pause(cluster.reads, "d1", command == "pause", NOW)


def test_fail_without_auto_revert(cluster: Cluster) -> None:
    _with(cluster, _deployment())
    change = deployments.fail(cluster.reads, "d1", NOW)
    (event,) = (e.event for e in change.events)
    assert isinstance(event, DeploymentUpdated) and event.status == "failed"
    assert event.status_description == "Deployment marked as failed" and change.reverted is None


def test_fail_with_auto_revert_registers_the_stable_version_again(cluster: Cluster) -> None:
    _with(cluster, _deployment(auto_revert=True))
    cluster.add(job(count=1, version=0, stable=True))
    cluster.add(job(version=1))  # the current job, back on top
    cluster.reads.stream_versions["job:default/web"] = 4
    change = deployments.fail(cluster.reads, "d1", NOW)
    reverted, failed = (e.event for e in change.events)
    assert isinstance(reverted, JobRegistered) and change.events[0].expected_version == 4
    assert reverted.job.version == 2 and reverted.job.task_groups[0].count == 1 and not reverted.job.stable
    assert isinstance(failed, DeploymentUpdated)
    assert failed.status_description == "Deployment marked as failed - rolling back to job version 0"
    assert change.reverted is not None and change.reverted.version == 2
