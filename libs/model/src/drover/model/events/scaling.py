"""A job's scaling events: each scale request recorded among its task group's (Nomad's)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from drover.model.events.base import Event, Reads, job_stream
from drover.model.scaling import JobScalingEvents, ScalingEvent

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter


class ScalingEventRegistered(Event):
    """A scale request recorded among its task group's scaling events (Nomad's
    ScalingEventRegisterRequest); Nomad's event stream carries none."""

    type: Literal["ScalingEventRegistered"] = "ScalingEventRegistered"
    nomad_event_type: ClassVar[str | None] = None
    namespace: str
    job_id: str
    task_group: str
    event: ScalingEvent

    def stream(self) -> str:
        return job_stream(self.namespace, self.job_id)

    def apply_to(self, state: StateWriter, index: int) -> None:
        events = state.scaling_events(self.namespace, self.job_id)
        if events is None:
            events = JobScalingEvents(namespace=self.namespace, job_id=self.job_id)
        state.upsert_scaling_events(events.with_event(self.task_group, self.event, index))

    def reads(self, r: Reads) -> None:
        pass  # the job's scaling events: one row, read when asked for
