"""A job restart's events (Drover's durable job restart: the servers restart a job's allocs in
batches and record each step): started, a batch signalled, its status changed, collected."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from drover.model.alloc import AllocRestartRequest, DesiredTransition
from drover.model.deployment import Deployment
from drover.model.events.base import Event, Reads, restart_stream
from drover.model.jobrestart import RESTART_CANCELLED, JobRestart

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter

DESC_DEPLOYMENT_STARTED = "Cancelled because deployment {} started"


class JobRestartStarted(Event):
    """An operator started a restart of a job."""

    type: Literal["JobRestartStarted"] = "JobRestartStarted"
    nomad_event_type: ClassVar[str | None] = "JobRestartStarted"
    restart: JobRestart

    def stream(self) -> str:
        return restart_stream(self.restart.namespace, self.restart.job_id)

    def apply_to(self, state: StateWriter, index: int) -> None:
        state.upsert_job_restart(
            self.restart.model_copy(update={"create_index": index, "modify_index": index})
        )

    def reads(self, r: Reads) -> None:
        pass  # a new restart: nothing to read


class JobRestartChange(Event):
    """A change to one restart of a job."""

    restart_id: str
    namespace: str = "default"
    job_id: str = ""

    def stream(self) -> str:
        return restart_stream(self.namespace, self.job_id)

    def reads(self, r: Reads) -> None:
        r.restarts.append(self.restart_id)


class JobRestartSignaled(JobRestartChange):
    """The job restart watcher signalled a batch: each alloc's restart request (in place), or its
    mark to migrate (with reschedule: the scheduler replaces it), and the restart's record of
    the batch, in one event - a batch is signalled and recorded together or not at all."""

    type: Literal["JobRestartSignaled"] = "JobRestartSignaled"
    nomad_event_type: ClassVar[str | None] = "JobRestartSignaled"
    batch_number: int
    requests: dict[str, AllocRestartRequest] = Field(default_factory=dict)
    migrate: list[str] = Field(default_factory=list)
    at: int = 0

    def alloc_ids(self) -> list[str]:
        return [*self.requests, *self.migrate]

    def reads(self, r: Reads) -> None:
        super().reads(r)
        r.allocs.extend(self.alloc_ids())

    def apply_to(self, state: StateWriter, index: int) -> None:
        """Record the batch and signal its allocs. A batch already recorded (its number not the
        next) changes nothing: a signal is applied once, however often it was written."""
        r = state.job_restart(self.restart_id)
        if r is None or r.terminal() or self.batch_number != r.batch_number + 1:
            return
        ids = self.alloc_ids()
        update = {
            "batch_number": self.batch_number,
            "batch": ids,
            "batch_signaled_at": self.at,
            "batch_done_at": 0,
            "restarted_allocs": [*r.restarted_allocs, *ids],
            "updated_at": self.at,
            "modify_index": index,
        }
        state.upsert_job_restart(r.model_copy(update=update))
        for alloc_id, req in self.requests.items():
            old = state.alloc(alloc_id)
            if old is not None:
                state.upsert_alloc(old.model_copy(update={"restart_request": req, "modify_index": index}))
        migrate = DesiredTransition(migrate=True).model_dump(exclude_none=True)
        for alloc_id in self.migrate:
            old = state.alloc(alloc_id)
            if old is not None:
                merged = old.desired_transition.model_copy(update=migrate)
                state.upsert_alloc(
                    old.model_copy(update={"desired_transition": merged, "modify_index": index})
                )


class JobRestartUpdated(JobRestartChange):
    """A restart's status changed (paused, resumed, cancelled, complete, failed), or its batch in
    flight was seen done. A terminal restart stays as it ended."""

    type: Literal["JobRestartUpdated"] = "JobRestartUpdated"
    nomad_event_type: ClassVar[str | None] = "JobRestartUpdated"
    status: str = ""
    status_description: str = ""
    batch_done_at: int = 0
    at: int = 0

    def apply_to(self, state: StateWriter, index: int) -> None:
        r = state.job_restart(self.restart_id)
        if r is None or r.terminal():
            return
        update: dict[str, object] = {"modify_index": index, "updated_at": self.at or r.updated_at}
        if self.status:
            update["status"] = self.status
            update["status_description"] = self.status_description
        if self.batch_done_at:
            update["batch_done_at"] = self.batch_done_at
        state.upsert_job_restart(r.model_copy(update=update))


class JobRestartDeleted(JobRestartChange):
    """A terminal restart collected after gc_restart_threshold: it leaves the projections; the
    log keeps its history."""

    type: Literal["JobRestartDeleted"] = "JobRestartDeleted"
    nomad_event_type: ClassVar[str | None] = "JobRestartDeleted"

    def apply_to(self, state: StateWriter, index: int) -> None:
        r = state.job_restart(self.restart_id)
        if r is not None:
            state.delete_job_restart(r)


def cancel_for_deployment(state: StateWriter, index: int, dep: Deployment, at: int) -> None:
    """A deployment that starts cancels its job's restarts that have not ended."""
    for r in state.job_restarts_of(dep.namespace, dep.job_id):
        if not r.terminal():
            update = {
                "status": RESTART_CANCELLED,
                "status_description": DESC_DEPLOYMENT_STARTED.format(dep.id),
                "updated_at": at or r.updated_at,
                "modify_index": index,
            }
            state.upsert_job_restart(r.model_copy(update=update))
