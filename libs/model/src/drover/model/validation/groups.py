"""Task groups and their tasks (structs.TaskGroup.Validate, structs.Task.Validate): their own
fields, lifecycle and scaling here; their blocks by the modules named for them."""

from __future__ import annotations

from drover.model.canonical_blocks import SCALING_HORIZONTAL
from drover.model.drivers import config_problems
from drover.model.durations import format_duration
from drover.model.job import (
    JOB_TYPE_BATCH,
    JOB_TYPE_SERVICE,
    JOB_TYPE_SYSBATCH,
    JOB_TYPE_SYSTEM,
    TASK_HOOKS,
    Job,
    Task,
    TaskGroup,
)
from drover.model.validation.dispatch import dispatch_payload_problems
from drover.model.validation.integrations import integrations_at
from drover.model.validation.network import networks_problems
from drover.model.validation.placement import (
    affinities_at,
    constraints_at,
    resources_problems,
    spreads_at,
)
from drover.model.validation.places import at
from drover.model.validation.policies import (
    disconnect_problems,
    migrate_problems,
    reschedule_problems,
    restart_problems,
    update_problems,
)
from drover.model.validation.services import group_services_at, task_services_at
from drover.model.validation.taskfiles import task_files_at
from drover.model.validation.volumes import volume_mounts_at, volumes_at

# structs.EphemeralDisk.Validate.
MIN_EPHEMERAL_DISK_MB = 10


def task_groups_problems(job: Job) -> list[str]:
    """Every group's problems in turn, a name used twice reported just before the group's own."""
    out: list[str] = []
    seen: dict[str, int] = {}
    for idx, tg in enumerate(job.task_groups, 1):
        where = f"Task group '{tg.name}'" if tg.name else f"Task group {idx}"
        if tg.name in seen:
            out.append(f"{where}: group {idx} has the same name as group {seen[tg.name]}")
        elif tg.name:
            seen[tg.name] = idx
        out += _group_problems(tg, job.type, where)
    return out


def _group_problems(tg: TaskGroup, job_type: str, where: str) -> list[str]:
    out = at(where, _group_field_problems(tg, job_type))
    out += constraints_at(where, tg.constraints)
    out += affinities_at(where, tg.affinities, job_type)
    out += spreads_at(where, tg.spreads, job_type)
    out += at(where, _restart_and_reschedule_problems(tg, job_type))
    out += at(where, _ephemeral_disk_problems(tg))
    out += at(where, _update_migrate_disconnect_problems(tg, job_type))
    out += at(where, _task_name_problems(tg))
    out += volumes_at(where, tg, job_type)
    out += at(where, networks_problems(tg))
    out += group_services_at(where, tg)
    out += at(where, _scaling_problems(tg))
    for idx, task in enumerate(tg.tasks, 1):
        task_where = f"{where}, task '{task.name}'" if task.name else f"{where}, task {idx}"
        out += at(task_where, _task_problems(task, tg, job_type))
        out += constraints_at(task_where, task.constraints, task_level=True)
        out += affinities_at(task_where, task.affinities, job_type)
        out += task_services_at(task_where, task, tg)
        out += task_files_at(task_where, task)
        out += volume_mounts_at(task_where, task, tg)
        out += integrations_at(task_where, task)
    return out


def _group_field_problems(tg: TaskGroup, job_type: str) -> list[str]:
    out: list[str] = []
    if not tg.name:
        out.append("name is empty")
    elif "\0" in tg.name:
        out.append("name contains a null character")
    if tg.count < 0:
        out.append(f"count {tg.count} is negative")
    elif job_type == JOB_TYPE_SYSTEM and tg.count > 1:
        # Nomad's Job.Validate: a system group runs once per node, so count is 0 or 1.
        out.append(f"count {tg.count} is above 1, which system jobs do not allow")
    if not tg.tasks:
        out.append("has no tasks")
    if tg.shutdown_delay is not None and tg.shutdown_delay < 0:
        out.append(f"shutdown_delay {format_duration(tg.shutdown_delay)} is negative")
    if tg.max_run_duration is not None:
        if tg.max_run_duration <= 0:
            out.append(f"max_run_duration {format_duration(tg.max_run_duration)} must be greater than zero")
        if job_type not in (JOB_TYPE_BATCH, JOB_TYPE_SYSBATCH):
            out.append(f"{job_type} jobs do not allow max_run_duration")
    return out


def _restart_and_reschedule_problems(tg: TaskGroup, job_type: str) -> list[str]:
    out: list[str] = []
    if tg.restart_policy is None:
        out.append("has no restart policy (was the job canonicalized?)")
    else:
        out += restart_problems(tg.restart_policy)

    if job_type in (JOB_TYPE_SYSTEM, JOB_TYPE_SYSBATCH):
        if tg.reschedule_policy is not None:
            out.append(f"{job_type} jobs run on every node and may not have a reschedule policy")
    elif tg.reschedule_policy is not None:
        out += reschedule_problems(tg.reschedule_policy)
    elif job_type in (JOB_TYPE_SERVICE, JOB_TYPE_BATCH):
        # Only these types have a default; an unknown type is reported once, at the job.
        out.append("has no reschedule policy (was the job canonicalized?)")
    return out


def _ephemeral_disk_problems(tg: TaskGroup) -> list[str]:
    if tg.ephemeral_disk is None:
        return ["has no ephemeral disk (was the job canonicalized?)"]
    if tg.ephemeral_disk.size_mb < MIN_EPHEMERAL_DISK_MB:
        return [
            f"ephemeral disk {tg.ephemeral_disk.size_mb} MB is below the minimum of "
            f"{MIN_EPHEMERAL_DISK_MB} MB"
        ]
    return []


def _update_migrate_disconnect_problems(tg: TaskGroup, job_type: str) -> list[str]:
    out: list[str] = []
    if tg.update is not None:
        if job_type not in (JOB_TYPE_SERVICE, JOB_TYPE_SYSTEM):
            out.append(f"{job_type} jobs may not have an update block")
        out += update_problems(tg.update)
    if tg.migrate is not None:
        if job_type != JOB_TYPE_SERVICE:
            out.append(f"{job_type} jobs may not have a migrate block")
        else:
            out += migrate_problems(tg.migrate)
    if tg.disconnect is not None:
        out += disconnect_problems(tg.disconnect, job_type)
    return out


def _task_name_problems(tg: TaskGroup) -> list[str]:
    out: list[str] = []
    seen: dict[str, int] = {}
    for idx, task in enumerate(tg.tasks, 1):
        if not task.name:
            out.append(f"task {idx} has no name")
        elif task.name in seen:
            out.append(f"task {idx} has the same name as task {seen[task.name]} ({task.name!r})")
        else:
            seen[task.name] = idx
    if sum(1 for t in tg.tasks if t.leader) > 1:
        out.append("more than one task is marked as leader")
    # A group of lifecycle tasks alone has nothing for them to run around.
    if tg.tasks and all(t.lifecycle is not None and t.lifecycle.hook for t in tg.tasks):
        out.append("must have at least one main task (a task without a lifecycle hook)")
    return out


def _scaling_problems(tg: TaskGroup) -> list[str]:
    """The group's `scaling` block (structs ScalingPolicy.Validate, validateScalingPolicy): its
    bounds, and the group's count within them. Canonical, min defaults to the count."""
    s = tg.scaling
    if s is None:
        return []
    out: list[str] = []
    if s.type != SCALING_HORIZONTAL:
        out.append(f"scaling policy type {s.type!r} is not valid (expected {SCALING_HORIZONTAL})")
    high = -1 if s.max is None else s.max
    low = tg.count if s.min is None else s.min
    if high < 0:
        out.append("scaling: maximum count must be specified and non-negative")
    elif high < low:
        out.append(f"scaling: maximum count {high} must not be less than minimum count {low}")
    if low < 0:
        out.append(f"scaling: minimum count {low} must be non-negative")
    if tg.count > high >= 0:
        out.append(f"scaling: group count {tg.count} must not be greater than the maximum count {high}")
    if tg.count < low:
        out.append(f"scaling: group count {tg.count} must not be less than the minimum count {low}")
    return out


def _task_problems(task: Task, tg: TaskGroup, job_type: str) -> list[str]:
    out: list[str] = []
    if task.name == "alloc":
        out.append('a task may not be named "alloc" (it is the shared alloc directory)')
    if "/" in task.name or "\\" in task.name:
        out.append("task name contains a slash")
    elif "\0" in task.name:
        out.append("task name contains a null character")
    if not task.driver:
        out.append("no driver given")
    out.extend(config_problems(task.driver, task.config))
    if task.lifecycle is not None:
        hook = task.lifecycle.hook
        if not hook:
            out.append("lifecycle: no lifecycle hook provided")
        elif hook not in TASK_HOOKS:
            out.append(f"lifecycle: invalid hook {hook!r} (expected one of {', '.join(TASK_HOOKS)})")
    if task.shutdown_delay < 0:
        out.append(f"shutdown_delay {format_duration(task.shutdown_delay)} is negative")
    if task.kill_timeout < 0:
        out.append(f"kill timeout {format_duration(task.kill_timeout)} is negative")
    elif (
        job_type == JOB_TYPE_SERVICE
        and tg.update is not None
        and tg.update.progress_deadline > 0
        and task.kill_timeout > tg.update.progress_deadline
    ):
        out.append(
            f"kill timeout {format_duration(task.kill_timeout)} is longer than the group's progress "
            f"deadline {format_duration(tg.update.progress_deadline)}"
        )
    out.extend(resources_problems(task.resources))
    if task.restart_policy is not None:
        out.extend(restart_problems(task.restart_policy))
    if task.dispatch_payload is not None:
        out.extend(dispatch_payload_problems(task.dispatch_payload, task.name))
    out.extend(_log_config_problems(task, tg))
    return out


def _log_config_problems(task: Task, tg: TaskGroup) -> list[str]:
    """structs.LogConfig.Validate, and the logs' room on the ephemeral disk (Task.Validate)."""
    logs = task.log_config
    if logs is None:
        return []
    out = []
    if logs.max_files < 1:
        out.append(f"logs: max_files must be at least 1, not {logs.max_files}")
    if logs.max_file_size_mb < 1:
        out.append(f"logs: max_file_size must be at least 1 MB, not {logs.max_file_size_mb}")
    usage = logs.max_files * logs.max_file_size_mb
    disk = tg.ephemeral_disk.size_mb if tg.ephemeral_disk is not None else 0
    if not out and disk and usage >= disk:
        out.append(f"logs: log storage ({usage} MB) must be less than the ephemeral disk ({disk} MB)")
    return out
