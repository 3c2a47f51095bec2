"""Canonicalization: fill Nomad's defaults into a submitted job, as Nomad does on register.

Rules (Nomad's api Job/TaskGroup/Task Canonicalize):

* Merging is field by field and only a field the user actually wrote wins. A field that was
  absent or null in the JSON is not in the model's ``model_fields_set``, so it takes the value
  from the next layer down. Precedence: group > job > per-type default (as Nomad's
  reschedule block merges).
* The result is fully explicit: every field of every block is marked as set. Canonicalizing a
  canonical job therefore changes nothing, and an explicit value (say ``Attempts: 0`` with
  ``Unlimited: false``, which disables rescheduling) is never mistaken for "not given".
* The input job is never mutated.
"""

from __future__ import annotations

from drover.model import canonical_blocks as blocks
from drover.model.base import overlay
from drover.model.defaults import (
    DEFAULT_DATACENTERS,
    DEFAULT_KILL_TIMEOUT,
    DEFAULT_NAMESPACE,
    DEFAULT_NODE_POOL,
    DEFAULT_PRIORITY,
    DEFAULT_REGION,
    RECONCILE_BEST_SCORE,
    default_disconnect,
    default_ephemeral_disk,
    default_migrate_strategy,
    default_reschedule_policy,
    default_restart_policy,
    default_update_strategy,
)
from drover.model.job import (
    DISPATCH_PAYLOAD_OPTIONAL,
    JOB_TYPE_SERVICE,
    JOB_TYPE_SYSTEM,
    Job,
    LogConfig,
    MigrateStrategy,
    ReschedulePolicy,
    Task,
    TaskGroup,
    UpdateStrategy,
)


def canonicalize(job: Job) -> Job:
    """A new job with Nomad's defaults filled in; ``job`` itself is left untouched."""
    out = job.model_copy(deep=True)

    # api Job.Canonicalize: a nil type is a service job; the name defaults to the ID.
    out.type = out.type or JOB_TYPE_SERVICE
    out.name = out.name or out.id
    out.namespace = out.namespace or DEFAULT_NAMESPACE
    out.region = out.region or DEFAULT_REGION
    out.node_pool = out.node_pool or DEFAULT_NODE_POOL
    if not out.datacenters:
        out.datacenters = list(DEFAULT_DATACENTERS)
    if out.priority == 0:
        out.priority = DEFAULT_PRIORITY
    if out.periodic is not None:
        out.periodic.spec_type = out.periodic.spec_type or "cron"
        out.periodic.time_zone = out.periodic.time_zone or "UTC"
    if out.parameterized_job is not None:
        out.parameterized_job.payload = out.parameterized_job.payload or DISPATCH_PAYLOAD_OPTIONAL

    _canonicalize_job_policies(out)
    out.task_groups = [_canonicalize_group(tg, out) for tg in out.task_groups]

    # Rebuild from a full dump: every field at every level becomes "set", which is what makes
    # canonicalize idempotent and keeps filled defaults from being overridden later.
    return Job.model_validate(out.model_dump())


def _canonicalize_job_policies(job: Job) -> None:
    """Fill the job-level update/reschedule/migrate blocks; groups inherit them afterwards."""
    if job.update is not None:
        job.update = overlay(default_update_strategy(), job.update)
    elif job.type in (JOB_TYPE_SERVICE, JOB_TYPE_SYSTEM):
        # Since Nomad 0.10 (service) and 1.11 (system), api Job.Canonicalize gives a job without
        # an update block the default one, so its groups roll with max_parallel 1.
        job.update = default_update_strategy()

    reschedule_default = default_reschedule_policy(job.type)
    if job.reschedule is not None and reschedule_default is not None:
        job.reschedule = overlay(reschedule_default, job.reschedule)

    if job.migrate is not None:
        job.migrate = overlay(default_migrate_strategy(), job.migrate)


def _is_empty_update(update: UpdateStrategy) -> bool:
    """api UpdateStrategy.Empty: every field zero. An empty job-level block is not inherited."""
    return update == UpdateStrategy()


def _group_update(tg: TaskGroup, job: Job) -> UpdateStrategy | None:
    if tg.update is not None:
        return overlay(default_update_strategy(), job.update, tg.update)
    if job.update is not None and not _is_empty_update(job.update):
        return job.update.model_copy(deep=True)
    return None


def _group_reschedule(tg: TaskGroup, job: Job) -> ReschedulePolicy | None:
    default = default_reschedule_policy(job.type)
    if default is not None:
        return overlay(default, job.reschedule, tg.reschedule_policy)
    if job.reschedule is None and tg.reschedule_policy is None:
        return None
    # System and sysbatch jobs have no default, but a block the user wrote is kept (merged
    # job -> group) so that validation can reject it, as Nomad does, instead of dropping it.
    return overlay(ReschedulePolicy(), job.reschedule, tg.reschedule_policy)


def _group_migrate(tg: TaskGroup, job: Job) -> MigrateStrategy | None:
    if job.migrate is not None or tg.migrate is not None:
        return overlay(default_migrate_strategy(), job.migrate, tg.migrate)
    if job.type == JOB_TYPE_SERVICE:
        # Only service jobs migrate allocs off draining nodes with a strategy (api TaskGroup).
        return default_migrate_strategy()
    return None


def _canonicalize_group(tg: TaskGroup, job: Job) -> TaskGroup:
    out = tg.model_copy(deep=True)
    if "count" not in tg.model_fields_set and tg.scaling is not None and tg.scaling.min is not None:
        # api TaskGroup.Canonicalize: a group without a count starts at its scaling minimum.
        out.count = tg.scaling.min
    if tg.scaling is not None:
        out.scaling = blocks.scaling(tg.scaling, out.count)
    out.networks = [blocks.network(n) for n in tg.networks]
    out.services = [blocks.service(s, job.name, tg.name, None) for s in tg.services]
    if tg.disconnect is None:
        out.disconnect = blocks.folded_disconnect(
            tg.max_client_disconnect, tg.stop_after_client_disconnect, tg.prevent_reschedule_on_lost
        )
    out.ephemeral_disk = overlay(default_ephemeral_disk(), tg.ephemeral_disk)
    out.restart_policy = overlay(default_restart_policy(job.type), tg.restart_policy)
    out.reschedule_policy = _group_reschedule(tg, job)
    out.update = _group_update(tg, job)
    out.migrate = _group_migrate(tg, job)
    if out.disconnect is not None:
        out.disconnect = overlay(default_disconnect(), out.disconnect)
        # structs DisconnectStrategy.Canonicalize: an empty reconcile option means best_score.
        out.disconnect.reconcile = out.disconnect.reconcile or RECONCILE_BEST_SCORE
    out.tasks = [_canonicalize_task(t, out, job) for t in tg.tasks]
    return out


def _canonicalize_task(task: Task, tg: TaskGroup, job: Job) -> Task:
    """api Task.Canonicalize; `tg` already canonical."""
    out = task.model_copy(deep=True)
    out.services = [blocks.service(s, job.name, tg.name, task.name) for s in task.services]
    out.templates = [blocks.template(t) for t in task.templates]
    out.artifacts = [blocks.artifact(a) for a in task.artifacts]
    out.volume_mounts = [blocks.volume_mount(v) for v in task.volume_mounts]
    if task.vault is not None:
        out.vault = blocks.vault(task.vault)
    if task.csi_plugin_config is not None:
        out.csi_plugin_config = blocks.csi_plugin(task.csi_plugin_config)
    out.resources.networks = [blocks.network(n) for n in task.resources.networks]
    # A task's restart block is laid over its group's; without one it takes the group's.
    out.restart_policy = overlay(tg.restart_policy, task.restart_policy) if tg.restart_policy else None
    if out.kill_timeout == 0:
        out.kill_timeout = DEFAULT_KILL_TIMEOUT
    # api LogConfig.Canonicalize: a missing block, or a missing member, takes the default.
    out.log_config = overlay(LogConfig(), task.log_config)
    res = out.resources
    if res.cores > 0 and "cpu" not in res.model_fields_set:
        # api Resources.Canonicalize: asking for cores without cpu means cpu 0, not the 100 MHz
        # default (a task may ask for one or the other, never both).
        res.cpu = 0
    return out


__all__ = ["canonicalize", "overlay"]
