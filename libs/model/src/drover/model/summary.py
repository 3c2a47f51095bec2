"""Job summaries, as Nomad's: each group's allocs counted by client status, and the job's
children (dispatched or periodic launches, by ParentID) counted by their status."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from drover.model.alloc import (
    ALLOC_CLIENT_COMPLETE,
    ALLOC_CLIENT_FAILED,
    ALLOC_CLIENT_LOST,
    ALLOC_CLIENT_PENDING,
    ALLOC_CLIENT_RUNNING,
    ALLOC_CLIENT_UNKNOWN,
)
from drover.model.base import NomadModel
from drover.model.job import JOB_STATUS_DEAD, JOB_STATUS_PENDING, JOB_STATUS_RUNNING, Job


class TaskGroupSummary(NomadModel):
    queued: int = 0
    complete: int = 0
    failed: int = 0
    running: int = 0
    starting: int = 0
    lost: int = 0
    unknown: int = 0


class JobChildrenSummary(NomadModel):
    pending: int = 0
    running: int = 0
    dead: int = 0


class JobSummary(NomadModel):
    job_id: str = ""
    namespace: str = "default"
    summary: dict[str, TaskGroupSummary] = Field(default_factory=dict)
    children: JobChildrenSummary = Field(default_factory=JobChildrenSummary)
    create_index: int = 0
    modify_index: int = 0


# The summary's count each client status adds to (a pending alloc is "starting").
_COUNTED_AS = {
    ALLOC_CLIENT_PENDING: "starting",
    ALLOC_CLIENT_RUNNING: "running",
    ALLOC_CLIENT_COMPLETE: "complete",
    ALLOC_CLIENT_FAILED: "failed",
    ALLOC_CLIENT_LOST: "lost",
    ALLOC_CLIENT_UNKNOWN: "unknown",
}
_CHILD_STATUSES = {JOB_STATUS_PENDING: "pending", JOB_STATUS_RUNNING: "running", JOB_STATUS_DEAD: "dead"}


def job_summary(
    job: Job, alloc_counts: Iterable[tuple[str, str, int]], child_statuses: Iterable[str]
) -> JobSummary:
    """The summary of `job` from its allocs counted by (task group, client status, count) and the
    derived statuses of its children. Allocs of groups the job no longer has are not counted."""
    groups = {tg.name: TaskGroupSummary() for tg in job.task_groups}
    for group, client_status, n in alloc_counts:
        field = _COUNTED_AS.get(client_status)
        if group in groups and field is not None:
            setattr(groups[group], field, getattr(groups[group], field) + n)
    children = JobChildrenSummary()
    for status in child_statuses:
        if status in _CHILD_STATUSES:
            field = _CHILD_STATUSES[status]
            setattr(children, field, getattr(children, field) + 1)
    return JobSummary(
        job_id=job.id,
        namespace=job.namespace,
        summary=groups,
        children=children,
        create_index=job.create_index,
        modify_index=job.modify_index,
    )
