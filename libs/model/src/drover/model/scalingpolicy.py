"""A job's scaling policies as Nomad keeps them (structs.ScalingPolicy): the group `scaling`
blocks (type horizontal) and the tasks' vertical ones, each with its server-side ID, Namespace
and Target (Namespace, Job, Group and, for a task's, Task), listed and read by ID for the Nomad
Autoscaler.

A policy keeps its ID across the job's registrations while its job key (type, group, task)
stays, as Nomad's propagateScalingPolicyIDs does; a new one gets a new ID. CreateIndex is the
index of the register that first had it, ModifyIndex that of the last register."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from pydantic import Field

from drover.model.base import NomadModel
from drover.model.job import Job, ScalingPolicy

TARGET_NAMESPACE = "Namespace"
TARGET_JOB = "Job"
TARGET_GROUP = "Group"
TARGET_TASK = "Task"


class ScalingPolicyListStub(NomadModel):
    """Nomad's ScalingPolicyListStub: what the policy list answers."""

    id: str = Field("", alias="ID")
    enabled: bool = True
    type: str = ""
    target: dict[str, str] = Field(default_factory=dict)
    create_index: int = 0
    modify_index: int = 0


def _each(job: Job) -> Iterator[tuple[ScalingPolicy, str, str]]:
    """(policy, group, task) for every policy of `job` ("" task for a group's)."""
    for tg in job.task_groups:
        if tg.scaling is not None:
            yield tg.scaling, tg.name, ""
        for task in tg.tasks:
            for p in task.scaling_policies:
                yield p, tg.name, task.name


def job_key(policy: ScalingPolicy, group: str, task: str) -> tuple[str, str, str]:
    """What names a policy within its job (Nomad's ScalingPolicy.JobKey)."""
    return policy.type, group, task


def target(job: Job, group: str, task: str) -> dict[str, str]:
    out = {TARGET_NAMESPACE: job.namespace, TARGET_JOB: job.id, TARGET_GROUP: group}
    if task:
        out[TARGET_TASK] = task
    return out


def with_policy_ids(job: Job, existing: Job | None, new_id: Callable[[], str]) -> Job:
    """`job` with each policy's ID, Namespace and Target set: the ID (and indexes) of
    `existing`'s policy of the same job key, else `new_id()`."""
    if not any(True for _ in _each(job)):
        return job
    old = {job_key(p, g, t): p for p, g, t in _each(existing)} if existing is not None else {}
    out = job.model_copy(deep=True)
    for p, group, task in _each(out):
        before = old.get(job_key(p, group, task))
        p.id = before.id if before is not None else new_id()
        p.create_index = before.create_index if before is not None else 0
        p.modify_index = before.modify_index if before is not None else 0
        p.namespace = job.namespace
        p.target = target(job, group, task)
    return out


def with_policy_indexes(job: Job, index: int) -> Job:
    """`job` registered at `index`: each policy's ModifyIndex that, its CreateIndex that unless
    an earlier register had it."""
    if not any(True for _ in _each(job)):
        return job
    out = job.model_copy(deep=True)
    for p, _, _ in _each(out):
        p.create_index = p.create_index or index
        p.modify_index = index
    return out


def job_policies(job: Job) -> list[ScalingPolicy]:
    return [p for p, _, _ in _each(job)]


def stub(policy: ScalingPolicy) -> ScalingPolicyListStub:
    return ScalingPolicyListStub(
        id=policy.id,
        enabled=policy.enabled,
        type=policy.type,
        target=dict(policy.target),
        create_index=policy.create_index,
        modify_index=policy.modify_index,
    )


def matching(policies: list[ScalingPolicy], job_id: str = "", type_prefix: str = "") -> list[ScalingPolicy]:
    """The policies of job `job_id` (any job when "") whose type starts with `type_prefix`, as
    Nomad's list filters them, ordered by ID."""
    out = [
        p
        for p in policies
        if (not job_id or p.target.get(TARGET_JOB) == job_id) and p.type.startswith(type_prefix)
    ]
    return sorted(out, key=lambda p: p.id)
