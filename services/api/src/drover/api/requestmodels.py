"""Request bodies as models, in Nomad's names, so /openapi.json documents each one. A model
checks types and shapes; the commands (drover.control.commands) check the rest, and say what is wrong
in the domain's words. Scalars are strict: `"AllTasks": "yes"` is refused, not read as true."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    StrictBool,
    StrictInt,
    StrictStr,
    StringConstraints,
    field_validator,
    model_validator,
)

from drover.model import Job, Node
from drover.model.base import NomadModel
from drover.model.durations import parse_duration
from drover.model.events import AllocClientUpdate
from drover.model.jobwarnings import job_warnings
from drover.model.nodepool import NodePool
from drover.model.schedulerconfig import SchedulerConfiguration, algorithm_problems, node_scoring_problems
from drover.model.serviceregistration import ServiceRegistration
from drover.model.unkept import format_warnings, unkept_in_job


class Body(NomadModel):
    model_config = ConfigDict(strict=True)


class JobBody(Body):
    """A body carrying a `Job`: `warnings` names what in its JSON the model does not keep
    (drover.model.unkept) and what it keeps but Drover does not carry out
    (drover.model.jobwarnings, with Nomad's own deprecation warnings), in Nomad's form, for the answer's Warnings."""

    _unkept: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _find_unkept(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        body = handler(data)
        if isinstance(data, dict):
            body._unkept = unkept_in_job(data.get("Job", data.get("job")))
        return body

    @property
    def warnings(self) -> str:
        return self.warnings_with([])

    def warnings_with(self, more: list[str]) -> str:
        """The body's warnings and `more` (what the command found: drover.control.commands.operator)."""
        job = getattr(self, "job", None)
        return format_warnings(self._unkept + (job_warnings(job) if job is not None else []) + more)


class JobRegisterRequest(JobBody):
    """`PUT /v1/jobs`, `PUT /v1/job/:id`: the job to register; with EnforceIndex, only if the
    job's JobModifyIndex is JobModifyIndex (0: only if it does not exist)."""

    job: Job
    enforce_index: StrictBool = False
    job_modify_index: StrictInt = 0
    # The write request's namespace (Nomad's WriteRequest): ahead of the job's, behind ?namespace=.
    namespace: StrictStr = ""


class JobPlanRequest(JobBody):
    """`PUT /v1/job/:id/plan`: the job to plan (nothing is written); with `Diff`, the answer
    carries its diff from the job as registered."""

    job: Job
    diff: StrictBool = False
    policy_override: StrictBool = False
    namespace: StrictStr = ""


class ScalingTarget(Body):
    group: StrictStr = ""
    job: StrictStr = ""
    namespace: StrictStr = ""


class ScalingRequest(Body):
    """`PUT /v1/job/:id/scale`: the group's new count (or, without one, only a scaling event:
    Message, Error, Meta); JobModifyIndex, if set, must be the job's."""

    count: StrictInt | None = None
    target: ScalingTarget = Field(default_factory=ScalingTarget)
    message: StrictStr = ""
    error: StrictBool = False
    meta: dict[StrictStr, Any] | None = None
    job_modify_index: StrictInt = 0
    policy_override: StrictBool = False


class JobRevertRequest(Body):
    """`POST /v1/job/:id/revert`: register version JobVersion again as the job's next version;
    with EnforcePriorVersion, only if the job is at that version now."""

    job_id: StrictStr = ""
    job_version: StrictInt = 0
    enforce_prior_version: StrictInt | None = None


class JobStabilityRequest(Body):
    """`POST /v1/job/:id/stable`: mark version JobVersion stable, or not."""

    job_id: StrictStr = ""
    job_version: StrictInt = 0
    stable: StrictBool = False


class DrainSpecBody(Body):
    # Nanoseconds; -1 forces the drain now, 0 means no deadline.
    deadline: StrictInt = 0
    ignore_system_jobs: StrictBool = False


class NodeDrainRequest(Body):
    """`PUT /v1/node/:id/drain`: start a drain (DrainSpec), or cancel it (DrainSpec null)."""

    drain_spec: DrainSpecBody | None = None
    mark_eligible: StrictBool = False


class NodeEligibilityRequest(Body):
    """`PUT /v1/node/:id/eligibility`."""

    eligibility: Literal["eligible", "ineligible"]


class DeploymentPromoteRequest(Body):
    """`PUT /v1/deployment/promote/:id`: promote the canaries of every group, or of those named."""

    groups: list[StrictStr] = Field(default_factory=list)
    all: StrictBool = False


class DeploymentPauseRequest(Body):
    """`PUT /v1/deployment/pause/:id`: pause, or resume."""

    pause: StrictBool


class AllocRestartBody(Body):
    """`PUT /v1/client/allocation/:id/restart`: one task by name, the running ones, or all."""

    task_name: StrictStr = ""
    all_tasks: StrictBool = False


class NodeRegisterRequest(Body):
    """`PUT /v1/drover/node/register`: a client registers its node, with the SecretID it will
    authenticate with (`Node.SecretID`, a UUID, as Nomad's client generates it). The secret is
    taken out of the node here: no document of the node ever holds it."""

    node: Node
    _secret_id: object = PrivateAttr(default="")

    @model_validator(mode="wrap")
    @classmethod
    def _take_secret(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        body = handler(data)
        node = data.get("Node") if isinstance(data, dict) else None
        body._secret_id = node.get("SecretID", "") if isinstance(node, dict) else ""
        return body

    @property
    def secret_id(self) -> object:
        """As sent (the command says what is wrong with it)."""
        return self._secret_id


class NodeStatusRequest(Body):
    """`PUT /v1/drover/node/:id/status`: a client reports its node's status."""

    status: Literal["initializing", "ready", "down", "disconnected"]


class HeartbeatsRequest(Body):
    """`PUT /v1/drover/heartbeats`: heartbeats of many nodes at once (a simulator's)."""

    node_ids: list[Annotated[StrictStr, StringConstraints(min_length=1)]] = Field(
        alias="NodeIDs", min_length=1
    )


class AllocsStatusRequest(Body):
    """`PUT /v1/drover/allocs/status`: a client reports its allocs' status."""

    node_id: StrictStr = ""
    updates: list[AllocClientUpdate]


class ServicesRequest(Body):
    """`PUT /v1/drover/services`: a client registers its allocs' services (Nomad's
    ServiceRegistration) and removes, by ID, those of allocs that stopped."""

    node_id: StrictStr = ""
    services: list[ServiceRegistration] = Field(default_factory=list)
    deregister: list[StrictStr] = Field(default_factory=list)


class JobRestartRequest(Body):
    """`POST /v1/job/:id/restart`: restart the job's allocs, BatchSize (a count or "n%") at a
    time, BatchWait (a duration or nanoseconds) between batches."""

    batch_size: StrictInt | StrictStr = 1
    batch_wait: StrictInt | StrictStr = 0
    groups: list[StrictStr] = Field(default_factory=list)
    tasks: list[StrictStr] = Field(default_factory=list)
    all_tasks: StrictBool = False
    reschedule: StrictBool = False
    on_error: StrictStr = "pause"
    health_check: StrictBool = False


class JobDispatchRequest(Body):
    """`POST /v1/job/:id/dispatch`: dispatch a parameterized job with a Payload (base64), Meta,
    the IdPrefixTemplate put in the child's ID and a Priority (0: the job's)."""

    job_id: StrictStr = ""
    payload: StrictStr = ""
    meta: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    id_prefix_template: StrictStr = Field(default="", alias="IdPrefixTemplate")
    priority: StrictInt = 0


class JobsParseRequest(Body):
    """`POST /v1/jobs/parse`: an HCL2 jobspec, the content of a var file, and whether to
    canonicalize the job parsed."""

    job_hcl: StrictStr = Field("", alias="JobHCL")
    variables: StrictStr = ""
    canonicalize: StrictBool = False


class JobValidateRequest(JobBody):
    """`POST /v1/validate/job`: the job to validate (nothing is written)."""

    job: Job | None = None


class NamespaceCapabilitiesBody(Body):
    enabled_task_drivers: list[StrictStr] | None = None
    disabled_task_drivers: list[StrictStr] | None = None
    enabled_network_modes: list[StrictStr] | None = None
    disabled_network_modes: list[StrictStr] | None = None


class NamespaceGovernanceBody(Body):
    default: StrictStr = ""
    allowed: list[StrictStr] | None = None
    denied: list[StrictStr] | None = None


class NamespaceRequest(Body):
    """`PUT /v1/namespace/:name`, `PUT /v1/namespace`: a namespace written whole (Nomad's
    Namespace; its indexes are the log's, whatever the body says)."""

    name: StrictStr = ""
    description: StrictStr = ""
    quota: StrictStr = ""
    capabilities: NamespaceCapabilitiesBody | None = None
    node_pool_configuration: NamespaceGovernanceBody | None = None
    vault_configuration: NamespaceGovernanceBody | None = None
    consul_configuration: NamespaceGovernanceBody | None = None
    meta: dict[StrictStr, StrictStr] | None = None


class ACLPolicyBody(Body):
    """`PUT /v1/acl/policy/:name`: Nomad's ACLPolicy (its Name must be the path's)."""

    name: StrictStr = ""
    description: StrictStr = ""
    rules: StrictStr = ""


class ACLRoleLink(Body):
    id: StrictStr = ""
    name: StrictStr = ""


class ACLTokenBody(Body):
    """`POST /v1/acl/token[/:accessor]`: Nomad's ACLToken. ExpirationTTL is a Go duration
    ("1h") or nanoseconds, ExpirationTime an RFC 3339 time."""

    accessor_id: StrictStr = ""
    secret_id: StrictStr = ""
    name: StrictStr = ""
    type: StrictStr = ""
    policies: list[StrictStr] = Field(default_factory=list)
    roles: list[ACLRoleLink] = Field(default_factory=list)
    global_: StrictBool = Field(default=False, alias="Global")
    expiration_time: StrictStr | StrictInt | None = None
    expiration_ttl: StrictStr | StrictInt | None = Field(default=None, alias="ExpirationTTL")


class ACLBootstrapBody(Body):
    """`POST /v1/acl/bootstrap`: the management token's SecretID, if the operator chose one."""

    bootstrap_secret: StrictStr = ""


def _algorithm(value: str) -> str:
    problems = algorithm_problems(value)
    if problems:
        raise ValueError(problems[0].split(" (")[0])
    return value


Algorithm = Annotated[StrictStr, AfterValidator(_algorithm)]


def _node_scoring(value: str) -> str:
    problems = node_scoring_problems(value)
    if problems:
        raise ValueError(problems[0].split(" (")[0])
    return value


NodeScoring = Annotated[StrictStr, AfterValidator(_node_scoring)]


class PreemptionConfigBody(Body):
    system_scheduler_enabled: StrictBool = False
    sys_batch_scheduler_enabled: StrictBool = False
    batch_scheduler_enabled: StrictBool = False
    service_scheduler_enabled: StrictBool = False


class SchedulerConfigRequest(Body):
    """`PUT /v1/operator/scheduler/configuration`: the scheduler configuration, set whole (a
    member left out is off, as Nomad's decoder leaves it); its indexes are ignored."""

    scheduler_algorithm: Algorithm = ""
    preemption_config: PreemptionConfigBody = Field(default_factory=PreemptionConfigBody)
    memory_oversubscription_enabled: StrictBool = False
    reject_job_registration: StrictBool = False
    pause_eval_broker: StrictBool = False
    node_limit_for_feasibility_checks: Annotated[StrictInt, Field(ge=0)] = 0
    node_scoring: NodeScoring = ""
    create_index: StrictInt = 0
    modify_index: StrictInt = 0

    def config(self) -> SchedulerConfiguration:
        return SchedulerConfiguration.model_validate(
            self.model_dump(exclude={"create_index", "modify_index"})
        )


class NodePoolSchedulerConfigBody(Body):
    scheduler_algorithm: Algorithm = ""
    memory_oversubscription_enabled: StrictBool | None = None


class NodePoolRequest(Body):
    """`PUT /v1/node/pool/:name`: a node pool, written whole (Nomad's NodePool)."""

    name: StrictStr = ""
    description: StrictStr = ""
    meta: dict[StrictStr, StrictStr] | None = None
    scheduler_configuration: NodePoolSchedulerConfigBody | None = None
    node_identity_ttl: StrictInt | StrictStr | None = Field(default=None, alias="NodeIdentityTTL")

    @field_validator("node_identity_ttl")
    @classmethod
    def _ttl(cls, value: int | str | None) -> int | str | None:
        """A Go duration, checked here so a bad one is the request's 400."""
        if isinstance(value, str) and value:
            parse_duration(value)
        return value

    def pool(self) -> NodePool:
        return NodePool.model_validate(self.model_dump(exclude_none=True))


class SearchRequest(Body):
    """`POST /v1/search`: IDs by prefix in a context (or `all`); the rest of Nomad's
    QueryOptions that its client sends along are ignored but Namespace."""

    prefix: StrictStr = ""
    context: StrictStr = ""
    namespace: StrictStr = ""


class FuzzySearchRequest(Body):
    """`POST /v1/search/fuzzy`: names holding Text in a context (or `all`)."""

    text: StrictStr = ""
    context: StrictStr = ""
    namespace: StrictStr = ""
