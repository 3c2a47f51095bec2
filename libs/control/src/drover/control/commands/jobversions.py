"""Commands on a job's versions: revert to an earlier one (registered again as a new version)
and mark one stable or not. Each takes what it reads and `now`, and returns the events."""

from __future__ import annotations

from drover.control.change import Change
from drover.control.commands.jobs import JobChange, register
from drover.control.commands.operator import Admission
from drover.control.commands.reads import ClusterReads
from drover.control.errors import Conflict, Invalid, NotFound
from drover.model import Job
from drover.model.events import JobStabilityUpdated, NewEvent


def request_problems(path_job_id: str, job_id: str, version: int) -> list[str]:
    """What is wrong with a revert or stable request for job `path_job_id` whose body names
    `job_id` and `version`."""
    problems = []
    if not job_id:
        problems.append("JobID must be specified")
    elif job_id != path_job_id:
        problems.append("Job ID does not match")
    if version < 0:
        problems.append(f"JobVersion must not be negative (got {version})")
    return problems


def _job(reads: ClusterReads, namespace: str, job_id: str) -> Job:
    job = reads.job(namespace, job_id)
    if job is None:
        raise NotFound(f"job {job_id!r} not found")
    return job


def _version(reads: ClusterReads, namespace: str, job_id: str, version: int) -> Job:
    found = reads.job_version(namespace, job_id, version)
    if found is None:
        raise Invalid(f"job {job_id!r} in namespace {namespace!r} at version {version} not found")
    return found


def revert(
    reads: ClusterReads,
    namespace: str,
    job_id: str,
    version: int,
    enforce_prior_version: int | None,
    now: int,
    *,
    admission: Admission | None = None,
) -> JobChange:
    """Register version `version` of the job again, as its next version (Nomad's job revert):
    not stable, since it has not been deployed as that version. With `enforce_prior_version`,
    only if the job is at that version now (check and set); with `admission`, as a register
    is admitted."""
    job = _job(reads, namespace, job_id)
    if version == job.version:
        raise Invalid("can't revert to current version")
    target = _version(reads, namespace, job_id, version)
    if enforce_prior_version is not None and job.version != enforce_prior_version:
        raise Conflict(f"Current job has version {job.version}; enforcing version {enforce_prior_version}")
    reverted = target.model_copy(update={"stable": False})
    return register(reverted, job, reads.job_stream_version(namespace, job_id), now, admission=admission)


def set_stability(reads: ClusterReads, namespace: str, job_id: str, version: int, stable: bool) -> Change:
    """Mark version `version` of the job stable or not (Nomad's job stable): a deployment's
    auto-revert goes back to the latest stable version. Nothing is written when the version
    is already so."""
    _job(reads, namespace, job_id)
    target = _version(reads, namespace, job_id, version)
    if target.stable == stable:
        return Change()
    event = JobStabilityUpdated(namespace=namespace, job_id=job_id, version=version, stable=stable)
    return Change([NewEvent(event, expected_version=reads.job_stream_version(namespace, job_id))])
