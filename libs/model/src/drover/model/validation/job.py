"""The job's own fields and its periodic block (structs.Job.Validate, structs.PeriodicConfig.Validate)."""

from __future__ import annotations

from drover.model.defaults import MAX_PRIORITY, MIN_PRIORITY
from drover.model.job import JOB_TYPE_BATCH, JOB_TYPE_SYSBATCH, JOB_TYPES, Job, PeriodicConfig
from drover.model.periodic import (
    SPEC_CRON,
    SPEC_TEST,
    cron_problem,
    launch_times_problem,
    time_zone_exists,
)

PERIODIC_SPEC_TYPES = (SPEC_CRON, SPEC_TEST)


def job_problems(job: Job) -> list[str]:
    """What is wrong with the job's own fields (not its blocks or groups)."""
    out: list[str] = []
    if not job.id:
        out.append("ID is missing")
    elif " " in job.id:
        out.append(f"ID {job.id!r} contains a space")
    elif "\0" in job.id:
        out.append(f"ID {job.id!r} contains a null character")
    if not job.name:
        out.append("name is empty")
    elif "\0" in job.name:
        out.append(f"name {job.name!r} contains a null character")
    if not job.namespace:
        out.append("namespace is empty")
    if not job.region:
        out.append("region is empty")
    if not job.type:
        out.append("type is missing")
    elif job.type not in JOB_TYPES:
        out.append(f"unknown job type {job.type!r} (expected one of {', '.join(JOB_TYPES)})")
    if not MIN_PRIORITY <= job.priority <= MAX_PRIORITY:
        out.append(f"priority {job.priority} is outside {MIN_PRIORITY}..{MAX_PRIORITY}")
    if not job.datacenters:
        out.append("no datacenters given")
    elif any(dc == "" for dc in job.datacenters):
        out.append("a datacenter name is empty")
    if not job.task_groups:
        out.append("has no task groups")
    return out


def periodic_problems(p: PeriodicConfig, job_type: str) -> list[str]:
    """What is wrong with an enabled periodic block of a job of ``job_type``."""
    if not p.enabled:
        return []
    out: list[str] = []
    if job_type not in (JOB_TYPE_BATCH, JOB_TYPE_SYSBATCH):
        out.append(f"periodic is only allowed for batch and sysbatch jobs, not {job_type!r}")
    if p.spec_type not in PERIODIC_SPEC_TYPES:
        out.append(f"periodic spec type {p.spec_type!r} is unknown (expected cron or test)")
    given = [s for s in p.specs if s.strip()]
    if p.spec.strip() and given:
        out.append("periodic takes a spec (cron) or specs (crons), not both")
    elif not p.spec.strip() and not given:
        out.append("periodic is enabled but its spec is empty")
    for spec in [s for s in (p.spec, *p.specs) if s.strip()]:
        if p.spec_type == SPEC_CRON and (why := cron_problem(spec)) is not None:
            out.append(f"periodic cron spec {spec!r} is not a valid cron expression: {why}")
        elif p.spec_type == SPEC_TEST and (why := launch_times_problem(spec)) is not None:
            out.append(f"periodic test spec {spec!r} is not a list of unix times: {why}")
    if not time_zone_exists(p.time_zone):
        out.append(f"periodic time zone {p.time_zone!r} is unknown")
    return out
