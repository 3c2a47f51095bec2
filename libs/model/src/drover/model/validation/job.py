"""The job's own fields and its periodic block (structs.Job.Validate, structs.PeriodicConfig.Validate)."""

from __future__ import annotations

import re
import zoneinfo

from drover.model.defaults import MAX_PRIORITY, MIN_PRIORITY
from drover.model.job import JOB_TYPE_BATCH, JOB_TYPE_SYSBATCH, JOB_TYPES, Job, PeriodicConfig

PERIODIC_SPEC_TYPES = ("cron", "test")

# A sanity check of cron specs (Nomad parses them with gorhill/cronexpr): a predefined
# "@" schedule, or 5 to 7 fields made of the characters cron fields use.
_CRON_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,\-?#]+$")


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
    if not p.spec.strip():
        out.append("periodic is enabled but its spec is empty")
    elif p.spec_type == "cron" and not _cron_looks_valid(p.spec):
        out.append(f"periodic cron spec {p.spec!r} is not a valid cron expression")
    if not _time_zone_exists(p.time_zone):
        out.append(f"periodic time zone {p.time_zone!r} is unknown")
    return out


def _cron_looks_valid(spec: str) -> bool:
    text = spec.strip()
    if text.startswith("@"):
        return text in _CRON_MACROS
    fields = text.split()
    return 5 <= len(fields) <= 7 and all(_CRON_FIELD.match(f) for f in fields)


def _time_zone_exists(name: str) -> bool:
    # Go's time.LoadLocation accepts "", "UTC" and "Local" without a zone database.
    if name in ("", "UTC", "Local"):
        return True
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True
