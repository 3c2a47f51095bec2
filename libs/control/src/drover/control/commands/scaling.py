"""Scaling a job's task group (Nomad's job scale): a new version of the job with the group's
count, a job-scaling eval, and the request recorded among the group's scaling events. A
request without a count only records its event (an autoscaler reporting, or an error). A count
is refused while a deployment of the job is active, in Nomad's words (autoscalers match them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drover.control.commands.jobs import JobChange
from drover.control.commands.operator import Admission
from drover.control.errors import Conflict, Invalid, NotFound
from drover.model import Deployment, Job
from drover.model.evaluation import TRIGGER_SCALING, job_eval
from drover.model.events import EvalsUpserted, JobRegistered, NewEvent, ScalingEventRegistered
from drover.model.job import JOB_TYPE_SYSTEM, ScalingPolicy
from drover.model.scaling import ScalingEvent


@dataclass(frozen=True)
class ScaleRequest:
    """What a scale request asks, in Nomad's terms (its Target's Group, Job and Namespace)."""

    group: str
    count: int | None = None
    message: str = ""
    error: bool = False
    meta: dict[str, Any] | None = None
    # Check and set: scale only if the job's JobModifyIndex is this one (0: any).
    job_modify_index: int = 0
    target_job: str = ""
    target_namespace: str = ""


def request_problems(req: ScaleRequest, job_id: str, namespace: str) -> list[str]:
    """What is wrong with `req` itself, for job `job_id` in `namespace`."""
    problems = []
    if req.target_namespace and req.target_namespace != namespace:
        problems.append("Target.Namespace does not match the request's namespace")
    if req.target_job and req.target_job != job_id:
        problems.append("Target.Job does not match the job ID in the URL")
    if not req.group:
        problems.append("Target.Group is required: the task group to scale")
    if req.count is not None:
        if req.count < 0:
            problems.append("Count must be a non-negative integer")
        if req.error:
            problems.append("Count must not be given when Error is true")
    return problems


# Nomad's answer (400) to a count while the job's deployment is active.
BLOCKED_BY_DEPLOYMENT = "job scaling blocked due to active deployment"


def scale(
    job: Job | None,
    job_id: str,
    namespace: str,
    req: ScaleRequest,
    stream_version: int,
    now: int,
    deployment: Deployment | None = None,
    *,
    admission: Admission | None = None,
) -> JobChange:
    """Scale `job` (`job_id` in `namespace`, None if there is none), whose stream is at
    `stream_version`, as `req` asks; `deployment` is its active one, if any. With `admission`,
    only while the scheduler configuration allows registrations."""
    if admission is not None:
        admission.allow_registration()
    problems = request_problems(req, job_id, namespace)
    if job is None:
        if problems:
            raise Invalid.of(problems)
        raise NotFound("job not found")
    tg = job.lookup_task_group(req.group)
    if req.group and tg is None:
        problems.append(f"Target.Group {req.group!r} is not a task group of job {job.id!r}")
    if job.type == JOB_TYPE_SYSTEM and req.count is not None and req.count > 1:
        problems.append('jobs of type "system" can only be scaled between 0 and 1')
    if tg is not None and req.count is not None:
        problems += bounds_problems(tg.scaling, req.count)
    if problems:
        raise Invalid.of(problems)
    assert tg is not None
    if req.count is not None and _deploying(job, deployment):
        raise Invalid(BLOCKED_BY_DEPLOYMENT)
    if req.job_modify_index and req.job_modify_index != job.job_modify_index:
        raise Conflict(
            f"JobModifyIndex {req.job_modify_index} does not match the job's: {job.job_modify_index}"
        )
    event = ScalingEvent(
        time=now,
        count=req.count,
        previous_count=tg.count,
        message=req.message,
        error=req.error,
        meta=req.meta,
    )
    if req.count is None:
        recorded = ScalingEventRegistered(
            namespace=job.namespace, job_id=job.id, task_group=tg.name, event=event
        )
        return JobChange([NewEvent(recorded, expected_version=stream_version)], [], job)
    scaled = job.model_copy(deep=True)
    group = scaled.lookup_task_group(req.group)
    assert group is not None
    group.count = req.count
    scaled.version = job.version + 1
    scaled.submit_time = now
    # A periodic or parameterized job gets no eval: only its children run (Nomad's Job.Scale).
    evals = [] if job.launches_children() else [job_eval(scaled, TRIGGER_SCALING, now)]
    event.eval_id = evals[0].id if evals else None
    recorded = ScalingEventRegistered(namespace=job.namespace, job_id=job.id, task_group=tg.name, event=event)
    events = [NewEvent(JobRegistered(job=scaled), expected_version=stream_version), NewEvent(recorded)]
    if evals:
        events.append(NewEvent(EvalsUpserted(evals=evals)))
    return JobChange(events, evals, scaled)


def bounds_problems(policy: ScalingPolicy | None, count: int) -> list[str]:
    """A count outside the group's scaling bounds, in Nomad's words (Job.Scale)."""
    if policy is None:
        return []
    if policy.min is not None and count < policy.min:
        return [f"group count was less than scaling policy minimum: {count} < {policy.min}"]
    if policy.max is not None and policy.max < count:
        return [f"group count was greater than scaling policy maximum: {count} > {policy.max}"]
    return []


def _deploying(job: Job, deployment: Deployment | None) -> bool:
    """Whether `deployment` is active and of this job, not of an earlier one by the same ID."""
    return deployment is not None and deployment.active() and deployment.job_create_index == job.create_index
