"""The job restart events (seed 001; drover.model.restartreducer applies them)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from drover.model.alloc import AllocRestartRequest
from drover.model.eventbase import Event
from drover.model.jobrestart import JobRestart


def restart_stream(namespace: str, job_id: str) -> str:
    """The stream of a job's restarts: one per job, so that two restarts started at once
    cannot both find none running (optimistic concurrency)."""
    return f"jobrestart:{namespace}/{job_id}"


class JobRestartStarted(Event):
    """An operator started a restart of a job (seed 001)."""

    type: Literal["JobRestartStarted"] = "JobRestartStarted"
    category: ClassVar[str] = "JobRestart"
    restart: JobRestart

    def stream(self) -> str:
        return restart_stream(self.restart.namespace, self.restart.job_id)


class JobRestartSignaled(Event):
    """The restart watcher signalled a batch: each alloc's restart request (in place), or its
    mark to migrate (with reschedule: the scheduler replaces it), and the restart's record of
    the batch, in one event - a batch is signalled and recorded together or not at all."""

    type: Literal["JobRestartSignaled"] = "JobRestartSignaled"
    category: ClassVar[str] = "JobRestart"
    restart_id: str
    namespace: str = "default"
    job_id: str = ""
    batch_number: int
    requests: dict[str, AllocRestartRequest] = Field(default_factory=dict)
    migrate: list[str] = Field(default_factory=list)
    at: int = 0

    def stream(self) -> str:
        return restart_stream(self.namespace, self.job_id)

    def alloc_ids(self) -> list[str]:
        return [*self.requests, *self.migrate]


class JobRestartUpdated(Event):
    """A restart's status changed (paused, resumed, cancelled, complete, failed), or its batch in
    flight was seen done."""

    type: Literal["JobRestartUpdated"] = "JobRestartUpdated"
    category: ClassVar[str] = "JobRestart"
    restart_id: str
    namespace: str = "default"
    job_id: str = ""
    status: str = ""
    status_description: str = ""
    batch_done_at: int = 0
    at: int = 0

    def stream(self) -> str:
        return restart_stream(self.namespace, self.job_id)


class JobRestartDeleted(Event):
    """A terminal restart collected after gc_restart_threshold: it leaves the projections; the
    log keeps its history."""

    type: Literal["JobRestartDeleted"] = "JobRestartDeleted"
    category: ClassVar[str] = "JobRestart"
    restart_id: str
    namespace: str = "default"
    job_id: str = ""

    def stream(self) -> str:
        return restart_stream(self.namespace, self.job_id)
