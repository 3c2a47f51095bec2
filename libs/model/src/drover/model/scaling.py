"""Scaling events and the scale status (Nomad's ScalingEvent, JobScalingEvents,
JobScaleStatus): every scale request of a job is recorded per task group, newest first, the
last TRACKED_SCALING_EVENTS of each kept, and the scale status shows them beside each group's
desired and actual counts."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from drover.model.alloc import ALLOC_CLIENT_RUNNING, Allocation
from drover.model.base import NomadModel
from drover.model.job import Job

# Scaling events kept per task group (Nomad's JobTrackedScalingEvents).
TRACKED_SCALING_EVENTS = 20


class ScalingEvent(NomadModel):
    """One scale request: the count it set (none for an event that only reports, such as an
    autoscaler's error), the count before, its message, error flag and meta, and the eval it
    created."""

    time: int = 0
    count: int | None = None
    previous_count: int = 0
    message: str = ""
    error: bool = False
    meta: dict[str, Any] | None = None
    eval_id: str | None = None
    create_index: int = 0


class JobScalingEvents(NomadModel):
    """A job's scaling events by task group, newest first."""

    namespace: str = "default"
    job_id: str = ""
    scaling_events: dict[str, list[ScalingEvent]] = Field(default_factory=dict)
    modify_index: int = 0

    def with_event(self, group: str, event: ScalingEvent, index: int) -> JobScalingEvents:
        """These events with `event` (recorded at `index`) first in `group`'s, the oldest
        beyond TRACKED_SCALING_EVENTS dropped."""
        events = dict(self.scaling_events)
        recorded = event.model_copy(update={"create_index": index})
        events[group] = [recorded, *events.get(group, [])][:TRACKED_SCALING_EVENTS]
        return self.model_copy(update={"scaling_events": events, "modify_index": index})


class TaskGroupScaleStatus(NomadModel):
    desired: int = 0
    placed: int = 0
    running: int = 0
    healthy: int = 0
    unhealthy: int = 0
    # Null when the group has none, as Nomad answers.
    events: list[ScalingEvent] | None = None


class JobScaleStatus(NomadModel):
    job_id: str = ""
    namespace: str = "default"
    job_create_index: int = 0
    job_modify_index: int = 0
    job_stopped: bool = False
    task_groups: dict[str, TaskGroupScaleStatus] = Field(default_factory=dict)


def scale_status(job: Job, allocs: list[Allocation], events: JobScalingEvents | None) -> JobScaleStatus:
    """The job's scale status as Nomad computes it: per group, the desired count, and of its
    live allocs (canaries left out) those placed, running, healthy and unhealthy; with the
    group's scaling events. JobModifyIndex is the job's ModifyIndex, as in Nomad."""
    recorded = events.scaling_events if events is not None else {}
    groups = {
        tg.name: TaskGroupScaleStatus(desired=tg.count, events=recorded.get(tg.name) or None)
        for tg in job.task_groups
    }
    for a in allocs:
        st = groups.get(a.task_group)
        if st is None or a.is_canary() or a.terminal_status():
            continue
        st.placed += 1
        if a.client_status == ALLOC_CLIENT_RUNNING:
            st.running += 1
        health = a.deployment_status.healthy if a.deployment_status is not None else None
        if health is True:
            st.healthy += 1
        elif health is False:
            st.unhealthy += 1
    return JobScaleStatus(
        job_id=job.id,
        namespace=job.namespace,
        job_create_index=job.create_index,
        job_modify_index=job.modify_index,
        job_stopped=job.stop,
        task_groups=groups,
    )
