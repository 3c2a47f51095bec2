"""Jobs: the desired state (Job, TaskGroup, Task) and the blocks that shape placement."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field

from drover.model.base import NomadModel
from drover.model.integrations import (
    Consul,
    Multiregion,
    Secret,
    TaskCSIPluginConfig,
    Vault,
    WorkloadIdentity,
)
from drover.model.network import NetworkResource
from drover.model.services import Service
from drover.model.taskfiles import TaskArtifact, Template
from drover.model.volumes import VolumeMount, VolumeRequest

JOB_TYPE_SERVICE = "service"
JOB_TYPE_BATCH = "batch"
JOB_TYPE_SYSTEM = "system"
JOB_TYPE_SYSBATCH = "sysbatch"
JOB_TYPES = (JOB_TYPE_SERVICE, JOB_TYPE_BATCH, JOB_TYPE_SYSTEM, JOB_TYPE_SYSBATCH)

JOB_STATUS_PENDING = "pending"
JOB_STATUS_RUNNING = "running"
JOB_STATUS_DEAD = "dead"

DELAY_FUNCTIONS = ("constant", "exponential", "fibonacci")

# The `parameterized` block's payload rule, and what a dispatched child's ID is made of.
DISPATCH_PAYLOAD_OPTIONAL = "optional"
DISPATCH_PAYLOAD_REQUIRED = "required"
DISPATCH_PAYLOAD_FORBIDDEN = "forbidden"
DISPATCH_PAYLOAD_RULES = (DISPATCH_PAYLOAD_OPTIONAL, DISPATCH_PAYLOAD_REQUIRED, DISPATCH_PAYLOAD_FORBIDDEN)
DISPATCH_LAUNCH_SUFFIX = "/dispatch-"

# Constraint operands (Nomad's structs.Constraint*).
CONSTRAINT_DISTINCT_HOSTS = "distinct_hosts"
CONSTRAINT_DISTINCT_PROPERTY = "distinct_property"
CONSTRAINT_OPERANDS = (
    "=", "==", "is", "!=", "not", "<", "<=", ">", ">=",
    "regexp", "set_contains", "set_contains_all", "set_contains_any",
    "version", "semver", "is_set", "is_not_set",
    CONSTRAINT_DISTINCT_HOSTS, CONSTRAINT_DISTINCT_PROPERTY,
)  # fmt: skip
# distinct_* only make sense as hard constraints and is_set/is_not_set carry no preference, so
# affinities do not accept them (as in Nomad).
AFFINITY_OPERANDS = tuple(
    o for o in CONSTRAINT_OPERANDS if not o.startswith("distinct_") and o not in ("is_set", "is_not_set")
)


TASK_HOOK_PRESTART = "prestart"
TASK_HOOK_POSTSTART = "poststart"
TASK_HOOK_POSTSTOP = "poststop"
TASK_HOOKS = (TASK_HOOK_PRESTART, TASK_HOOK_POSTSTART, TASK_HOOK_POSTSTOP)


class Constraint(NomadModel):
    ltarget: str = ""
    rtarget: str = ""
    operand: str = "="

    def __str__(self) -> str:
        return f"{self.ltarget} {self.operand} {self.rtarget}".strip()


class Affinity(NomadModel):
    ltarget: str = ""
    rtarget: str = ""
    operand: str = "="
    weight: int = 50

    def __str__(self) -> str:
        return f"{self.ltarget} {self.operand} {self.rtarget} ({self.weight})"


class RequestedDevice(NomadModel):
    name: str = ""
    count: int = 0
    constraints: list[Constraint] = Field(default_factory=list)
    affinities: list[Affinity] = Field(default_factory=list)


class NUMAResource(NomadModel):
    affinity: str = ""
    devices: list[str] = Field(default_factory=list)


class Resources(NomadModel):
    """What a task asks for: CPU in MHz, memory and disk in MB (and, kept as Nomad keeps them,
    task-level networks, devices, NUMA, secrets and IOPS)."""

    cpu: int = 100
    cores: int = 0
    memory_mb: int = 300
    memory_max_mb: int = 0
    disk_mb: int = 0
    networks: list[NetworkResource] = Field(default_factory=list)
    devices: list[RequestedDevice] = Field(default_factory=list)
    numa: NUMAResource | None = None
    secrets_mb: int = 0
    iops: int = 0

    def add(self, other: Resources) -> Resources:
        return Resources(
            cpu=self.cpu + other.cpu,
            cores=self.cores + other.cores,
            memory_mb=self.memory_mb + other.memory_mb,
            memory_max_mb=self.memory_max_mb + other.memory_max_mb,
            disk_mb=self.disk_mb + other.disk_mb,
        )


class SpreadTarget(NomadModel):
    value: str = ""
    percent: int = 0


class Spread(NomadModel):
    attribute: str = ""
    weight: int = 50
    spread_target: list[SpreadTarget] = Field(default_factory=list)


class ReschedulePolicy(NomadModel):
    """The `reschedule` block (Nomad's ReschedulePolicy). Durations in ns."""

    attempts: int = 0
    interval: int = 0
    delay: int = 0
    delay_function: str = ""
    max_delay: int = 0
    unlimited: bool = False

    def enabled(self) -> bool:
        """Disabled is attempts 0 with unlimited false, as in Nomad."""
        return self.unlimited or self.attempts > 0


class RestartPolicy(NomadModel):
    """The `restart` block: local restarts by the client before an alloc is failed."""

    attempts: int = 0
    interval: int = 0
    delay: int = 0
    mode: str = ""
    render_templates: bool = False


class UpdateStrategy(NomadModel):
    """The `update` block: rolling updates and canaries."""

    stagger: int = 0
    max_parallel: int = 0
    health_check: str = ""
    min_healthy_time: int = 0
    healthy_deadline: int = 0
    progress_deadline: int = 0
    auto_revert: bool = False
    auto_promote: bool = False
    canary: int = 0

    def rolling(self) -> bool:
        """An update block with max_parallel 0 means no deployments at all (Nomad)."""
        return self.max_parallel > 0


class MigrateStrategy(NomadModel):
    max_parallel: int = 1
    health_check: str = "checks"
    min_healthy_time: int = 0
    healthy_deadline: int = 0


class Disconnect(NomadModel):
    """The `disconnect` block: what happens to allocs on a node that stops heartbeating."""

    lost_after: int = 0
    replace: bool = True
    reconcile: str = "best_score"
    stop_on_client_after: int = 0


class EphemeralDisk(NomadModel):
    sticky: bool = False
    size_mb: int = 300
    migrate: bool = False


class PeriodicConfig(NomadModel):
    """The `periodic` block: launch a child of the job on a schedule (drover.model.periodic).
    `Spec` is one cron expression (HCL `cron`), `Specs` several (HCL `crons`; JSON written with
    the HCL name, `Crons`, is read too)."""

    enabled: bool = True
    spec: str = ""
    specs: list[str] = Field(default_factory=list, validation_alias=AliasChoices("Specs", "Crons", "specs"))
    spec_type: str = "cron"
    prohibit_overlap: bool = False
    time_zone: str = "UTC"


class ParameterizedJobConfig(NomadModel):
    """The `parameterized` block: the job is a template, run by dispatching it with a payload
    and meta (`Payload` optional, required or forbidden; the meta keys it must and may carry)."""

    payload: str = ""
    meta_required: list[str] = Field(default_factory=list)
    meta_optional: list[str] = Field(default_factory=list)


class DispatchPayloadConfig(NomadModel):
    """A task's `dispatch_payload` block: the file, under the task's local dir, that receives
    the dispatched payload."""

    file: str = ""


class LogConfig(NomadModel):
    """A task's `logs` block: how many rotated files of each stream are kept, and the size (MB)
    at which the next one starts; `disabled`: the output is not kept at all."""

    max_files: int = 10
    max_file_size_mb: int = 10
    disabled: bool = False


class TaskLifecycle(NomadModel):
    """A task's `lifecycle`: run before (prestart), beside (poststart) or after (poststop)
    the main tasks; a sidecar keeps running with them."""

    hook: str = ""
    sidecar: bool = False


class Action(NomadModel):
    name: str = ""
    command: str = ""
    args: list[str] = Field(default_factory=list)


class TaskScheduleCron(NomadModel):
    start: str = ""
    end: str = ""
    timezone: str = ""


class TaskSchedule(NomadModel):
    cron: TaskScheduleCron | None = None


class ScalingPolicy(NomadModel):
    """A `scaling` block: a group's count bounds and an autoscaler's policy (Type horizontal),
    or a task's vertical policy; ID, Namespace and Target are the server's."""

    id: str = ""
    namespace: str = ""
    type: str = ""
    min: int | None = None
    max: int | None = None
    enabled: bool = True
    policy: dict[str, Any] = Field(default_factory=dict)
    target: dict[str, str] = Field(default_factory=dict)
    create_index: int = 0
    modify_index: int = 0


class JobUILink(NomadModel):
    label: str = ""
    url: str = Field("", alias="URL")


class JobUIConfig(NomadModel):
    description: str = ""
    links: list[JobUILink] = Field(default_factory=list)


class Task(NomadModel):
    name: str = ""
    driver: str = ""
    user: str = ""
    lifecycle: TaskLifecycle | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    resources: Resources = Field(default_factory=Resources)
    constraints: list[Constraint] = Field(default_factory=list)
    affinities: list[Affinity] = Field(default_factory=list)
    meta: dict[str, str] = Field(default_factory=dict)
    kill_timeout: int = 0
    leader: bool = False
    # The task's own `restart` block; canonicalized, its group's policy with it laid over.
    restart_policy: RestartPolicy | None = None
    dispatch_payload: DispatchPayloadConfig | None = None
    log_config: LogConfig | None = None
    services: list[Service] = Field(default_factory=list)
    artifacts: list[TaskArtifact] = Field(default_factory=list)
    templates: list[Template] = Field(default_factory=list)
    vault: Vault | None = None
    consul: Consul | None = None
    volume_mounts: list[VolumeMount] = Field(default_factory=list)
    csi_plugin_config: TaskCSIPluginConfig | None = Field(None, alias="CSIPluginConfig")
    shutdown_delay: int = 0
    kill_signal: str = ""
    kind: str = ""
    scaling_policies: list[ScalingPolicy] = Field(default_factory=list)
    secrets: list[Secret] = Field(default_factory=list)
    identity: WorkloadIdentity | None = None
    identities: list[WorkloadIdentity] = Field(default_factory=list)
    actions: list[Action] = Field(default_factory=list)
    schedule: TaskSchedule | None = None


class TaskGroup(NomadModel):
    name: str = ""
    count: int = 1
    constraints: list[Constraint] = Field(default_factory=list)
    affinities: list[Affinity] = Field(default_factory=list)
    spreads: list[Spread] = Field(default_factory=list)
    tasks: list[Task] = Field(default_factory=list)
    restart_policy: RestartPolicy | None = None
    reschedule_policy: ReschedulePolicy | None = None
    migrate: MigrateStrategy | None = None
    update: UpdateStrategy | None = None
    ephemeral_disk: EphemeralDisk | None = None
    disconnect: Disconnect | None = None
    meta: dict[str, str] = Field(default_factory=dict)
    networks: list[NetworkResource] = Field(default_factory=list)
    services: list[Service] = Field(default_factory=list)
    volumes: dict[str, VolumeRequest] = Field(default_factory=dict)
    scaling: ScalingPolicy | None = None
    shutdown_delay: int | None = None
    max_run_duration: int | None = None
    # Deprecated since Nomad 1.8 for the `disconnect` block; canonicalize folds them into it.
    stop_after_client_disconnect: int | None = None
    max_client_disconnect: int | None = None
    prevent_reschedule_on_lost: bool | None = None
    consul: Consul | None = None

    def combined_resources(self) -> Resources:
        """The group's total ask: every task's resources plus the ephemeral disk."""
        cpu = mem = mem_max = cores = 0
        for t in self.tasks:
            cpu += t.resources.cpu
            cores += t.resources.cores
            mem += t.resources.memory_mb
            mem_max += t.resources.memory_max_mb
        disk = self.ephemeral_disk.size_mb if self.ephemeral_disk is not None else 0
        return Resources(cpu=cpu, cores=cores, memory_mb=mem, memory_max_mb=mem_max, disk_mb=disk)

    def lost_after(self) -> int:
        return self.disconnect.lost_after if self.disconnect is not None else 0


class Job(NomadModel):
    id: str = ""
    name: str = ""
    namespace: str = "default"
    region: str = "global"
    type: str = JOB_TYPE_SERVICE
    priority: int = 50
    all_at_once: bool = False
    datacenters: list[str] = Field(default_factory=lambda: ["*"])
    node_pool: str = "default"
    constraints: list[Constraint] = Field(default_factory=list)
    affinities: list[Affinity] = Field(default_factory=list)
    spreads: list[Spread] = Field(default_factory=list)
    task_groups: list[TaskGroup] = Field(default_factory=list)
    update: UpdateStrategy | None = None
    reschedule: ReschedulePolicy | None = None
    migrate: MigrateStrategy | None = None
    periodic: PeriodicConfig | None = None
    meta: dict[str, str] = Field(default_factory=dict)
    multiregion: Multiregion | None = None
    ui: JobUIConfig | None = None
    consul_namespace: str = ""
    vault_namespace: str = ""
    nomad_token_id: str = ""
    stop: bool = False
    status: str = ""
    status_description: str = ""
    stable: bool = False
    version: int = 0
    submit_time: int = 0
    create_index: int = 0
    modify_index: int = 0
    job_modify_index: int = 0
    parent_id: str = ""
    dispatched: bool = False
    parameterized_job: ParameterizedJobConfig | None = None
    dispatch_idempotency_token: str = ""
    # A dispatched child's payload, base64 in the JSON (kept as given; Nomad keeps it compressed).
    payload: str | None = None

    def lookup_task_group(self, name: str) -> TaskGroup | None:
        for tg in self.task_groups:
            if tg.name == name:
                return tg
        return None

    def is_system(self) -> bool:
        return self.type in (JOB_TYPE_SYSTEM, JOB_TYPE_SYSBATCH)

    def is_batch(self) -> bool:
        return self.type in (JOB_TYPE_BATCH, JOB_TYPE_SYSBATCH)

    def stopped(self) -> bool:
        return self.stop

    def is_parameterized(self) -> bool:
        """A parameterized job itself, not one of the children dispatched from it."""
        return self.parameterized_job is not None and not self.dispatched

    def child(self, child_id: str, now: int, **update: Any) -> Job:
        """A new job `child_id` launched from this one (a periodic launch, a dispatch): a copy of
        its spec with ParentID set, submitted at `now`, not yet indexed; `update` for the rest."""
        return self.model_copy(
            deep=True,
            update={
                "id": child_id,
                "name": child_id,
                "parent_id": self.id,
                "status": "",
                "status_description": "",
                "submit_time": now,
                "create_index": 0,
                "modify_index": 0,
                "job_modify_index": 0,
                **update,
            },
        )

    def launches_children(self) -> bool:
        """A periodic or parameterized job: a template never scheduled itself (Nomad creates
        no eval for it); the children it launches are."""
        return self.periodic is not None or self.is_parameterized()


# What a job carries besides its spec: changing these makes no new version.
_NOT_SPEC = frozenset(
    {
        "Version",
        "CreateIndex",
        "ModifyIndex",
        "JobModifyIndex",
        "Status",
        "StatusDescription",
        "SubmitTime",
        "Stable",
    }
)


def job_spec(job: Job) -> dict[str, Any]:
    """The parts of a job that make a new version when they change."""
    return {k: v for k, v in job.to_api().items() if k not in _NOT_SPEC}


def derive_job_status(
    job: Job, *, has_allocs: bool, live_allocs: bool, has_evals: bool, live_evals: bool
) -> str:
    """A job's Status, derived as Nomad derives it: a system, periodic or parameterized job
    runs until it is stopped; otherwise a live (non-terminal) alloc means running, else a live eval (pending or
    blocked) means pending; once it had allocs or evals and all are terminal it is dead."""
    if job.type == JOB_TYPE_SYSTEM or job.launches_children():
        return JOB_STATUS_DEAD if job.stop else JOB_STATUS_RUNNING
    if live_allocs:
        return JOB_STATUS_RUNNING
    if live_evals:
        return JOB_STATUS_PENDING
    if has_allocs or has_evals or job.stop:
        return JOB_STATUS_DEAD
    return JOB_STATUS_PENDING
