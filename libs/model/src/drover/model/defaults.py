"""Nomad's default policies, per job type.

Every function returns a fresh model built with all of its fields passed explicitly, so every
field is in ``model_fields_set``: canonicalization relies on that to treat filled defaults as
settled values (idempotence). Each constant says where Nomad defines it.
"""

from __future__ import annotations

from drover.model.durations import HOUR, MINUTE, SECOND
from drover.model.job import (
    JOB_TYPE_BATCH,
    JOB_TYPE_SERVICE,
    JOB_TYPE_SYSTEM,
    Disconnect,
    EphemeralDisk,
    MigrateStrategy,
    ReschedulePolicy,
    RestartPolicy,
    UpdateStrategy,
)

# Job-level defaults: api/jobs.go Job.Canonicalize and nomad/structs (DefaultNamespace,
# JobDefaultPriority, GlobalRegion); "*" is Nomad's datacenter wildcard (structs.DefaultDatacenter)
# and "default" its built-in node pool (structs.NodePoolDefault).
DEFAULT_NAMESPACE = "default"
DEFAULT_REGION = "global"
DEFAULT_DATACENTERS = ("*",)
DEFAULT_NODE_POOL = "default"
DEFAULT_PRIORITY = 50
MIN_PRIORITY = 1
MAX_PRIORITY = 100  # structs.JobMaxPriority (the server's default job_max_priority)

# Task defaults: structs.DefaultKillTimeout, api Task.Canonicalize.
DEFAULT_KILL_TIMEOUT = 5 * SECOND
# structs.DefaultLogConfig: 10 files of each stream, 10 MB each.
DEFAULT_LOG_MAX_FILES = 10
DEFAULT_LOG_MAX_FILE_SIZE_MB = 10

# Placement weights: api Affinity.Canonicalize and Spread.Canonicalize use 50 for a nil weight.
DEFAULT_AFFINITY_WEIGHT = 50
DEFAULT_SPREAD_WEIGHT = 50

# Ephemeral disk: structs.DefaultEphemeralDisk / api DefaultEphemeralDisk (300 MB).
DEFAULT_EPHEMERAL_DISK_MB = 300

# Restart policy modes: structs.RestartPolicyModeFail / RestartPolicyModeDelay.
RESTART_MODE_FAIL = "fail"
RESTART_MODE_DELAY = "delay"

# Update/migrate health checks: structs.UpdateStrategyHealthCheck_* and MigrateStrategyHealth*.
HEALTH_CHECK_CHECKS = "checks"
HEALTH_CHECK_TASK_STATES = "task_states"
HEALTH_CHECK_MANUAL = "manual"

# Disconnect reconcile options: structs.ReconcileOption* (nomad/structs/group.go).
RECONCILE_BEST_SCORE = "best_score"
RECONCILE_OPTIONS = (RECONCILE_BEST_SCORE, "keep_original", "keep_replacement", "longest_running")


def default_reschedule_policy(job_type: str) -> ReschedulePolicy | None:
    """The reschedule block a group of ``job_type`` gets when none is given (Nomad's
    per-type defaults).

    Service: structs.DefaultServiceJobReschedulePolicy; batch: DefaultBatchJobReschedulePolicy.
    System and sysbatch jobs run on every node and are never rescheduled, so they have none.
    """
    if job_type == JOB_TYPE_SERVICE:
        return ReschedulePolicy(
            attempts=0,
            interval=0,
            delay=30 * SECOND,
            delay_function="exponential",
            max_delay=1 * HOUR,
            unlimited=True,
        )
    if job_type == JOB_TYPE_BATCH:
        return ReschedulePolicy(
            attempts=1,
            interval=24 * HOUR,
            delay=5 * SECOND,
            delay_function="constant",
            max_delay=0,
            unlimited=False,
        )
    return None


def default_restart_policy(job_type: str) -> RestartPolicy:
    """The restart block a group of ``job_type`` starts from.

    Service and system: structs.DefaultServiceJobRestartPolicy; batch and sysbatch:
    DefaultBatchJobRestartPolicy. Like api TaskGroup.Canonicalize, any other type gets the batch one.
    """
    if job_type in (JOB_TYPE_SERVICE, JOB_TYPE_SYSTEM):
        return RestartPolicy(
            attempts=2,
            interval=30 * MINUTE,
            delay=15 * SECOND,
            mode=RESTART_MODE_FAIL,
            render_templates=False,
        )
    return RestartPolicy(
        attempts=3, interval=24 * HOUR, delay=15 * SECOND, mode=RESTART_MODE_FAIL, render_templates=False
    )


def default_update_strategy() -> UpdateStrategy:
    """structs.DefaultUpdateStrategy / api DefaultUpdateStrategy."""
    return UpdateStrategy(
        stagger=30 * SECOND,
        max_parallel=1,
        health_check=HEALTH_CHECK_CHECKS,
        min_healthy_time=10 * SECOND,
        healthy_deadline=5 * MINUTE,
        progress_deadline=10 * MINUTE,
        auto_revert=False,
        auto_promote=False,
        canary=0,
    )


def default_migrate_strategy() -> MigrateStrategy:
    """structs.DefaultMigrateStrategy / api DefaultMigrateStrategy."""
    return MigrateStrategy(
        max_parallel=1,
        health_check=HEALTH_CHECK_CHECKS,
        min_healthy_time=10 * SECOND,
        healthy_deadline=5 * MINUTE,
    )


def default_disconnect() -> Disconnect:
    """structs.NewDefaultDisconnectStrategy / api NewDefaultDisconnectStrategy."""
    return Disconnect(lost_after=0, replace=True, reconcile=RECONCILE_BEST_SCORE, stop_on_client_after=0)


def default_ephemeral_disk() -> EphemeralDisk:
    """structs.DefaultEphemeralDisk: 300 MB, neither sticky nor migrated."""
    return EphemeralDisk(sticky=False, size_mb=DEFAULT_EPHEMERAL_DISK_MB, migrate=False)


__all__ = [
    "DEFAULT_AFFINITY_WEIGHT",
    "DEFAULT_DATACENTERS",
    "DEFAULT_EPHEMERAL_DISK_MB",
    "DEFAULT_KILL_TIMEOUT",
    "DEFAULT_NAMESPACE",
    "DEFAULT_NODE_POOL",
    "DEFAULT_PRIORITY",
    "DEFAULT_REGION",
    "DEFAULT_SPREAD_WEIGHT",
    "HEALTH_CHECK_CHECKS",
    "HEALTH_CHECK_MANUAL",
    "HEALTH_CHECK_TASK_STATES",
    "MAX_PRIORITY",
    "MIN_PRIORITY",
    "RECONCILE_BEST_SCORE",
    "RECONCILE_OPTIONS",
    "RESTART_MODE_DELAY",
    "RESTART_MODE_FAIL",
    "default_disconnect",
    "default_ephemeral_disk",
    "default_migrate_strategy",
    "default_reschedule_policy",
    "default_restart_policy",
    "default_update_strategy",
]
