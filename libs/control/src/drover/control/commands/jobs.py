"""Job commands: register (with Nomad's version and update rules), the dry-run plan (the same
version rule), deregister and evaluate; scaling is `drover.control.commands.scaling`, revert and stable
`drover.control.commands.jobversions`. Each takes what it reads and `now`, and returns the events."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Protocol

from drover.control.change import Change
from drover.control.commands.operator import Admission
from drover.control.errors import Conflict, Invalid, NotFound
from drover.model import Job
from drover.model.canonicalize import canonicalize
from drover.model.evaluation import (
    TRIGGER_JOB_DEREGISTER,
    TRIGGER_JOB_REGISTER,
    job_eval,
)
from drover.model.events import JobDeregistered, JobRegistered, NewEvent
from drover.model.job import job_spec
from drover.model.namespace import Namespace, job_problems
from drover.model.scalingpolicy import with_policy_ids
from drover.model.state import InMemoryState
from drover.model.validation import validate_job
from drover.scheduler import SchedulerResult, schedule


class NamespaceLookup(Protocol):
    def namespace(self, name: str) -> Namespace | None: ...


def prepare(job: Job, namespaces: NamespaceLookup | None = None) -> Job:
    """The job as submitted, canonicalized (defaults filled) and validated; with `namespaces`,
    also admitted to its namespace as Nomad's namespace constraint hook admits it (it must
    exist and allow the job's task drivers and network modes)."""
    job = canonicalize(job)
    problems = validate_job(job)
    if namespaces is not None:
        problems += job_problems(job, namespaces.namespace(job.namespace))
    if problems:
        raise Invalid.of(problems, "Job is invalid:")
    return job


def next_version(existing: Job | None, job: Job) -> int:
    """A new job is version 0; registering it again bumps the version only when its spec
    changed (Nomad's rule: the same spec registered twice is one version)."""
    if existing is None:
        return 0
    same = job_spec(existing) == job_spec(job.model_copy(update={"version": existing.version}))
    return existing.version + (0 if same else 1)


@dataclass
class JobChange(Change):
    """A change to a job: `job` as it is after it, and the warnings its register gets."""

    job: Job | None = None
    warnings: list[str] = field(default_factory=list)


def update_problems(existing: Job | None, job: Job) -> list[str]:
    """Changes a register may not make (Nomad's validateJobUpdate): a job is dispatched only by
    a dispatch, and stays periodic or not, parameterized or not."""
    if existing is None:
        return ["a job cannot be registered with Dispatched set"] if job.dispatched else []
    out = []
    if (existing.periodic is None) != (job.periodic is None):
        was = "periodic" if existing.periodic is not None else "non-periodic"
        now_is = "periodic" if job.periodic is not None else "non-periodic"
        out.append(f"cannot update {was} job {job.id!r} to being {now_is}")
    if existing.is_parameterized() != job.is_parameterized():
        was, now = ("", "non-") if existing.is_parameterized() else ("non-", "")
        out.append(f"cannot update a {was}parameterized job to being {now}parameterized")
    if existing.dispatched != job.dispatched:
        out.append("Dispatched is read-only")
    return out


def register(
    job: Job,
    existing: Job | None,
    stream_version: int,
    now: int,
    enforce_index: int | None = None,
    *,
    admission: Admission | None = None,
) -> JobChange:
    """Register `job` (prepared) over `existing`, whose stream is at `stream_version`: the job
    at its next version, and a job-register eval (none for a periodic or parameterized job,
    which only its children run). With `enforce_index` (Nomad's EnforceIndex), only if the
    job's JobModifyIndex is that (0: only if there is no such job). With `admission` (an
    operator's request; the cluster's own registers have none), only as the scheduler
    configuration and the job's node pool admit it."""
    warnings = admission.admit(job) if admission is not None else []
    if enforce_index is not None:
        check_index(existing, enforce_index)
    problems = update_problems(existing, job)
    if problems:
        raise Invalid.of(problems, "Job is invalid:")
    # Policy IDs first: a spec registered again keeps its version.
    job = with_policy_ids(job, existing, lambda: str(uuid.uuid4()))
    job = job.model_copy(update={"version": next_version(existing, job), "submit_time": now})
    evals = [] if job.launches_children() else [job_eval(job, TRIGGER_JOB_REGISTER, now)]
    change = Change.of([NewEvent(JobRegistered(job=job), expected_version=stream_version)], evals)
    return JobChange(change.events, change.evals, job, warnings)


def check_index(existing: Job | None, index: int) -> None:
    """Conflict unless the job is at JobModifyIndex `index` (0: it does not exist), in Nomad's words."""
    if existing is None:
        if index != 0:
            raise Conflict(f"Enforcing job modify index {index}: job does not exist")
    elif index == 0:
        raise Conflict("Enforcing job modify index 0: job already exists")
    elif existing.job_modify_index != index:
        raise Conflict(
            f"Enforcing job modify index {index}: job exists with conflicting job modify index: "
            f"{existing.job_modify_index}"
        )


def plan(state: InMemoryState, job: Job, now: int) -> tuple[Job | None, SchedulerResult]:
    """What registering `job` (prepared) would do, scheduled against `state` (a snapshot this
    call changes; nothing is written): the job as registered now, and the scheduler's result."""
    existing = state.job(job.namespace, job.id)
    state.upsert_job(job.model_copy(update={"version": next_version(existing, job)}))
    return existing, schedule(state, job_eval(job, TRIGGER_JOB_REGISTER, now), now)


def deregister(job: Job | None, purge: bool, now: int) -> Change:
    """Stop the job (with `purge`, forget it) and evaluate it, so its allocs stop (a periodic or
    parameterized job has none: its children are jobs of their own)."""
    if job is None:
        raise NotFound("job not found")
    return Change.of(
        [JobDeregistered(namespace=job.namespace, job_id=job.id, purge=purge)],
        [] if job.launches_children() else [job_eval(job, TRIGGER_JOB_DEREGISTER, now)],
    )


def evaluate(job: Job | None, now: int) -> JobChange:
    """A new job-register eval of the job as it is (Nomad's force evaluate)."""
    if job is None:
        raise NotFound("job not found")
    if job.launches_children():
        kind = "parameterized" if job.is_parameterized() else "periodic"
        raise Invalid(f"can't evaluate {kind} job {job.id!r}: only the children it launches are evaluated")
    change = Change.of([], [job_eval(job, TRIGGER_JOB_REGISTER, now)])
    return JobChange(change.events, change.evals, job)
