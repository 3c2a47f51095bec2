"""Operator commands on a deployment: promote its canaries, pause or resume it, fail it (rolling
the job back to its last stable version where the group asks for auto_revert). Each writes a
deployment-watcher eval so the scheduler acts on the change."""

from __future__ import annotations

from dataclasses import dataclass

from drover.control.change import Change
from drover.control.commands.reads import ClusterReads
from drover.control.errors import Invalid, NotFound
from drover.control.leader.deploymentwatcher import (
    DESC_FAILED_BY_USER,
    DESC_PAUSED,
    promotion_problems,
    rollback,
    wants_rollback,
)
from drover.model import Deployment, Job
from drover.model.deployment import (
    DEPLOYMENT_FAILED,
    DEPLOYMENT_PAUSED,
    DEPLOYMENT_RUNNING,
    DESC_RUNNING,
    DESC_RUNNING_NEEDS_PROMOTION,
)
from drover.model.evaluation import TRIGGER_DEPLOYMENT_WATCHER, job_eval
from drover.model.events import DeploymentUpdated, JobRegistered, NewEvent


@dataclass
class DeploymentChanged(Change):
    deployment: Deployment | None = None
    # The job version a failed deployment rolled back to, registered as a new version.
    reverted: Job | None = None


def _deployment(reads: ClusterReads, deployment_id: str) -> tuple[Deployment, Job]:
    dep = reads.deployment(deployment_id)
    if dep is None:
        raise NotFound("deployment not found")
    job = reads.job(dep.namespace, dep.job_id)
    if job is None:
        raise NotFound("job not found")
    return dep, job


def _changed(dep: Deployment, job: Job, now: int, **update: object) -> DeploymentChanged:
    eval_ = job_eval(job, TRIGGER_DEPLOYMENT_WATCHER, now, deployment_id=dep.id)
    event = DeploymentUpdated(deployment_id=dep.id, evals=[eval_], at=now, **update)
    return DeploymentChanged([NewEvent(event)], [eval_], dep)


def promote(
    reads: ClusterReads, deployment_id: str, groups: list[str], all_groups: bool, now: int
) -> DeploymentChanged:
    """Promote the canaries of `groups` (or of every group): the rest of the rollout goes on."""
    if not all_groups and not groups:
        raise Invalid("Promote needs All true or the Groups to promote")
    dep, job = _deployment(reads, deployment_id)
    problems = promotion_problems(dep, reads.deployment_allocs(dep), groups, all_groups)
    if problems:
        raise Invalid.of(problems)
    return _changed(
        dep,
        job,
        now,
        promote=True,
        promote_groups=[] if all_groups else groups,
        status_description=DESC_RUNNING,
    )


def pause(reads: ClusterReads, deployment_id: str, paused: bool, now: int) -> DeploymentChanged:
    """Pause the deployment (no eval: nothing moves), or resume it."""
    dep, job = _deployment(reads, deployment_id)
    if not dep.active():
        raise Invalid(f"can't {'pause' if paused else 'resume'} terminal deployment")
    if paused:
        event = DeploymentUpdated(
            deployment_id=dep.id, status=DEPLOYMENT_PAUSED, status_description=DESC_PAUSED, at=now
        )
        return DeploymentChanged([NewEvent(event)], [], dep)
    desc = DESC_RUNNING_NEEDS_PROMOTION if dep.requires_promotion() else DESC_RUNNING
    return _changed(dep, job, now, status=DEPLOYMENT_RUNNING, status_description=desc)


def fail(reads: ClusterReads, deployment_id: str, now: int) -> DeploymentChanged:
    """Fail the deployment; with auto_revert, register the job's latest stable version again."""
    dep, job = _deployment(reads, deployment_id)
    if not dep.active():
        raise Invalid("can't fail terminal deployment")
    desc, reverted = DESC_FAILED_BY_USER, None
    if wants_rollback(dep):
        desc, reverted = rollback(job, reads.job_versions(job.namespace, job.id), desc, now)
    changed = _changed(dep, reverted or job, now, status=DEPLOYMENT_FAILED, status_description=desc)
    if reverted is not None:
        # A new version of the job: it must follow the job's last event.
        version = reads.job_stream_version(job.namespace, job.id)
        changed.events.insert(0, NewEvent(JobRegistered(job=reverted), expected_version=version))
        changed.reverted = reverted
    return changed
