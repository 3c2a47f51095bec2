"""A job's events: a version registered, the job stopped or purged, a version marked stable."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from drover.model.events.base import Event, Reads, job_stream
from drover.model.job import JOB_STATUS_DEAD, JOB_STATUS_PENDING, Job
from drover.model.scalingpolicy import with_policy_indexes

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter


class JobRegistered(Event):
    """A new version of a job (or the same version re-registered with no spec change)."""

    type: Literal["JobRegistered"] = "JobRegistered"
    nomad_event_type: ClassVar[str | None] = "JobRegistered"
    job: Job

    def stream(self) -> str:
        return job_stream(self.job.namespace, self.job.id)

    def apply_to(self, state: StateWriter, index: int) -> None:
        job = self.job
        old = state.job(job.namespace, job.id)
        status = JOB_STATUS_DEAD if job.stop else (old.status if old else JOB_STATUS_PENDING)
        update = {
            "create_index": old.create_index if old else index,
            "modify_index": index,
            "job_modify_index": index,
            "status": status,
            # The same version registered again stays as stable as it was.
            "stable": old.stable if (old and old.version == job.version) else job.stable,
        }
        state.upsert_job(with_policy_indexes(job.model_copy(update=update), index))

    def reads(self, r: Reads) -> None:
        r.jobs.append((self.job.namespace, self.job.id))


class JobDeregistered(Event):
    """A job stopped (it stays, dead, with its versions), or purged (it leaves the state)."""

    type: Literal["JobDeregistered"] = "JobDeregistered"
    nomad_event_type: ClassVar[str | None] = "JobDeregistered"
    namespace: str
    job_id: str
    purge: bool = False

    def stream(self) -> str:
        return job_stream(self.namespace, self.job_id)

    def apply_to(self, state: StateWriter, index: int) -> None:
        if self.purge:
            state.delete_job(self.namespace, self.job_id)
            return
        old = state.job(self.namespace, self.job_id)
        if old is not None:
            update = {
                "stop": True,
                "status": JOB_STATUS_DEAD,
                "modify_index": index,
                "job_modify_index": index,
            }
            state.upsert_job(old.model_copy(update=update))

    def reads(self, r: Reads) -> None:
        r.jobs.append((self.namespace, self.job_id))


class JobStabilityUpdated(Event):
    """A version of a job marked stable or not (Nomad's job stable): the version itself, and
    the job too when it is the current one. Neither makes a new version nor moves
    JobModifyIndex (Nomad's UpdateJobStability)."""

    type: Literal["JobStabilityUpdated"] = "JobStabilityUpdated"
    nomad_event_type: ClassVar[str | None] = "JobStabilityUpdated"
    namespace: str
    job_id: str
    version: int
    stable: bool

    def stream(self) -> str:
        return job_stream(self.namespace, self.job_id)

    def apply_to(self, state: StateWriter, index: int) -> None:
        job = state.job(self.namespace, self.job_id)
        if job is not None and job.version == self.version:
            state.upsert_job(job.model_copy(update={"stable": self.stable, "modify_index": index}))
            return
        old = state.job_version(self.namespace, self.job_id, self.version)
        if old is not None:
            state.upsert_job_version(old.model_copy(update={"stable": self.stable, "modify_index": index}))

    def reads(self, r: Reads) -> None:
        r.jobs.append((self.namespace, self.job_id))
