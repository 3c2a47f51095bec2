"""Job validation: every problem of a (canonicalized) job at once, as readable messages.

The rules follow Nomad's ``Validate`` methods in nomad/structs (Job, TaskGroup, Task, Resources,
Constraint, Affinity, Spread, ReschedulePolicy, RestartPolicy, UpdateStrategy, MigrateStrategy,
DisconnectStrategy, PeriodicConfig, NetworkResource, Service, ServiceCheck, VolumeRequest,
VolumeMount, TaskLifecycle, TaskArtifact, Template, ScalingPolicy, Vault, WorkloadIdentity,
Secret), in Nomad's words where it has them. Each message starts with the place it is about,
e.g. ``Task group 'web': reschedule delay 1s is below the minimum of 5s``. The checks live in
``job`` (the job and its periodic block), ``dispatch`` (the parameterized block, a payload, the
tasks' dispatch_payload), ``groups`` (task groups and tasks, lifecycle, scaling), ``placement``
(resources, constraints, affinities, spreads), ``policies`` (reschedule, restart, update,
migrate, disconnect), ``network`` (networks and ports), ``services`` and ``checks``,
``volumes`` (volumes and mounts), ``taskfiles`` (artifacts, templates) and ``integrations``
(vault, identities, secrets).
"""

from __future__ import annotations

from drover.model.durations import format_duration
from drover.model.job import Job
from drover.model.validation.dispatch import parameterized_problems, payload_problems
from drover.model.validation.groups import MIN_EPHEMERAL_DISK_MB, task_groups_problems
from drover.model.validation.job import PERIODIC_SPEC_TYPES, job_problems, periodic_problems
from drover.model.validation.placement import (
    MEMORY_NO_LIMIT,
    MIN_CPU_MHZ,
    MIN_MEMORY_MB,
    VALID_AFFINITY_OPERANDS,
    affinities_at,
    affinity_problems,
    constraint_problems,
    constraints_at,
    resources_problems,
    spread_problems,
    spreads_at,
)
from drover.model.validation.places import at
from drover.model.validation.policies import (
    MIGRATE_HEALTH_CHECKS,
    RESCHEDULE_MIN_DELAY,
    RESCHEDULE_MIN_INTERVAL,
    RESTART_MIN_INTERVAL,
    RESTART_MODES,
    UPDATE_HEALTH_CHECKS,
    disconnect_problems,
    migrate_problems,
    reschedule_problems,
    restart_problems,
    update_problems,
)


def validate_job(job: Job) -> list[str]:
    """Every problem with ``job`` (run it on a canonicalized job); an empty list means valid."""
    problems = at("Job", job_problems(job))
    problems += affinities_at("Job", job.affinities, job.type)
    problems += spreads_at("Job", job.spreads, job.type)
    problems += constraints_at("Job", job.constraints)
    if job.periodic is not None:
        problems += at("Job", periodic_problems(job.periodic, job.type))
    if job.is_parameterized():
        assert job.parameterized_job is not None
        problems += at("Job", parameterized_problems(job.parameterized_job, job.type))
    problems += at("Job", payload_problems(job.payload))
    problems += task_groups_problems(job)
    return problems


__all__ = [
    "MEMORY_NO_LIMIT",
    "MIGRATE_HEALTH_CHECKS",
    "MIN_CPU_MHZ",
    "MIN_EPHEMERAL_DISK_MB",
    "MIN_MEMORY_MB",
    "PERIODIC_SPEC_TYPES",
    "RESCHEDULE_MIN_DELAY",
    "RESCHEDULE_MIN_INTERVAL",
    "RESTART_MIN_INTERVAL",
    "RESTART_MODES",
    "UPDATE_HEALTH_CHECKS",
    "VALID_AFFINITY_OPERANDS",
    "affinity_problems",
    "constraint_problems",
    "disconnect_problems",
    "format_duration",
    "migrate_problems",
    "reschedule_problems",
    "resources_problems",
    "restart_problems",
    "spread_problems",
    "update_problems",
    "validate_job",
]
