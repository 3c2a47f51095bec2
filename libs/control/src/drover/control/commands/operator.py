"""Operator commands: the scheduler configuration (set whole, or check-and-set on its
ModifyIndex as Nomad's `?cas=`), node pools (written and deleted, the built-in ones never), and
the admission rules they make for a job registered, dispatched, reverted or scaled
(`Admission`): RejectJobRegistration, a job's pool that must exist, memory_max ignored without
oversubscription. Words are Nomad's (nomad/operator_endpoint.go, node_pool_endpoint.go,
job_endpoint_hook_node_pool.go, job_endpoint_hooks.go)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from drover.control.change import Change
from drover.control.errors import Conflict, Forbidden, Invalid, NotFound
from drover.model import Job
from drover.model.events import NewEvent, NodePoolDeleted, NodePoolUpserted, SchedulerConfigUpdated
from drover.model.nodepool import NodePool, effective_config, pool_problems
from drover.model.schedulerconfig import (
    ERR_JOB_REGISTRATION_DISABLED,
    SchedulerConfiguration,
    scheduler_config_problems,
)


def _q(text: str) -> str:
    """`text` quoted as Go's %q quotes it (Nomad's messages)."""
    return json.dumps(text)


@dataclass
class ConfigChange(Change):
    """A configuration set, or (a check-and-set that lost) nothing: `updated` says which."""

    updated: bool = True


def set_scheduler_config(
    config: SchedulerConfiguration,
    current: SchedulerConfiguration | None,
    stream_version: int,
    cas: int | None = None,
) -> ConfigChange:
    """Set the configuration whole over `current` (None: never set, Nomad's default holds, at
    ModifyIndex 0), whose stream is at `stream_version`. With `cas`, only if `current`'s
    ModifyIndex is `cas`; otherwise nothing is written and `updated` is False, as Nomad answers."""
    problems = scheduler_config_problems(config)
    if problems:
        raise Invalid.of(problems)
    if cas is not None and cas != (current.modify_index if current is not None else 0):
        return ConfigChange(updated=False)
    stored = config.canonicalized().model_copy(update={"create_index": 0, "modify_index": 0})
    return ConfigChange([NewEvent(SchedulerConfigUpdated(config=stored), expected_version=stream_version)])


def upsert_node_pool(pool: NodePool, stream_version: int) -> Change:
    """Write a pool (created, or written again whole); the built-in ones are refused."""
    problems = pool_problems(pool)
    if problems:
        raise Invalid.of(problems, f"invalid node pool {_q(pool.name)}:")
    if pool.is_builtin():
        raise Invalid(f"modifying node pool {_q(pool.name)} is not allowed")
    stored = pool.model_copy(update={"create_index": 0, "modify_index": 0})
    return Change([NewEvent(NodePoolUpserted(pool=stored), expected_version=stream_version)])


def delete_node_pool(
    name: str,
    existing: NodePool | None,
    stream_version: int,
    *,
    has_nodes: bool,
    has_live_jobs: bool,
    region: str,
) -> Change:
    """Delete a pool no node is in and no job that has not ended uses (Nomad's rule: a pool's
    dead jobs do not hold it)."""
    if not name:
        raise Invalid("node pool name is empty")
    if existing is not None and existing.is_builtin():
        raise Invalid(f"deleting node pool {_q(name)} is not allowed")
    if existing is None:
        raise NotFound(f"node pool {name} not found")
    in_use = []
    if has_live_jobs:
        in_use.append(f"node pool {_q(name)} has non-terminal jobs in regions: [{region}]")
    if has_nodes:
        in_use.append(f"node pool {_q(name)} has nodes in regions: [{region}]")
    if in_use:
        raise Conflict("\n".join(in_use))
    return Change([NewEvent(NodePoolDeleted(name=name), expected_version=stream_version)])


@dataclass
class Admission:
    """What the cluster's configuration says of a job registered (or dispatched, reverted,
    scaled): read once per request. `management`: the request's token is a management one,
    which RejectJobRegistration lets through (Nomad's registrationsAreAllowed). Until ACL
    tokens are resolved, no request is: the ACL layer sets it from the resolved token."""

    config: SchedulerConfiguration
    pool: NodePool | None = None
    management: bool = False

    def allow_registration(self) -> None:
        """Refuse, as Nomad does, while RejectJobRegistration is set."""
        if self.config.reject_job_registration and not self.management:
            raise Forbidden(ERR_JOB_REGISTRATION_DISABLED)

    def admit(self, job: Job) -> list[str]:
        """Refuse `job` if registrations are off or its pool does not exist; the warnings it
        gets (memory_max ignored without memory oversubscription)."""
        self.allow_registration()
        return self.check(job)

    def check(self, job: Job) -> list[str]:
        """`admit` without the registration switch (a plan's: Nomad plans while registrations
        are refused, through the same admission hooks)."""
        if self.pool is None:
            raise Invalid(f"job {_q(job.id)} is in nonexistent node pool {_q(job.node_pool)}")
        return memory_max_warnings(job, effective_config(self.config, self.pool))


def memory_max_warnings(job: Job, config: SchedulerConfiguration) -> list[str]:
    if config.memory_oversubscription_enabled:
        return []
    return [
        f'Memory oversubscription is not enabled; Task "{tg.name}.{t.name}" memory_max value will be '
        "ignored. Update the Scheduler Configuration to allow oversubscription."
        for tg in job.task_groups
        for t in tg.tasks
        if t.resources.memory_max_mb != 0
    ]
