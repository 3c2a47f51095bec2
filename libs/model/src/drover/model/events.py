"""The event catalogue: every change to the cluster is one of these, appended to the log.

Each event names its stream (the aggregate it belongs to, for optimistic concurrency) and carries
what the reducer needs to change the state. The log position an event gets is the cluster index
(Nomad's raft index): the reducer stamps CreateIndex / ModifyIndex from it. The base and the job
restart and garbage-collection events have modules of their own (eventbase, restartevents,
gcevents), re-exported here.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, TypeAdapter, model_validator

from drover.model.alloc import (
    Allocation,
    AllocDeploymentStatus,
    AllocRestartRequest,
    DesiredTransition,
    ReplicaAllocation,
    TaskState,
)
from drover.model.base import NomadModel
from drover.model.deployment import Deployment
from drover.model.evaluation import Evaluation
from drover.model.eventbase import Event as Event
from drover.model.eventbase import NewEvent as NewEvent
from drover.model.eventbase import dispatch_stream as dispatch_stream
from drover.model.eventbase import job_stream as job_stream
from drover.model.eventbase import node_stream as node_stream
from drover.model.gcevents import Collected as Collected
from drover.model.gcevents import DeploymentsCollected as DeploymentsCollected
from drover.model.gcevents import EvalsCollected as EvalsCollected
from drover.model.gcevents import JobCollected as JobCollected
from drover.model.gcevents import NodesCollected as NodesCollected
from drover.model.job import Job
from drover.model.node import DrainStrategy, Node
from drover.model.placements import (
    COLUMNS_FROM,
    Placements,
    ReplicaPlacements,
    attach_metrics,
    encode_placements,
    metrics_object,
    with_metrics,
)
from drover.model.restartevents import JobRestartDeleted as JobRestartDeleted
from drover.model.restartevents import JobRestartSignaled as JobRestartSignaled
from drover.model.restartevents import JobRestartStarted as JobRestartStarted
from drover.model.restartevents import JobRestartUpdated as JobRestartUpdated
from drover.model.restartevents import restart_stream as restart_stream
from drover.model.scaling import ScalingEvent


# --- nodes ---
class NodeRegistered(Event):
    type: Literal["NodeRegistered"] = "NodeRegistered"
    category: ClassVar[str] = "Node"
    node: Node

    def stream(self) -> str:
        return node_stream(self.node.id)


class NodeStatusUpdated(Event):
    type: Literal["NodeStatusUpdated"] = "NodeStatusUpdated"
    category: ClassVar[str] = "Node"
    node_id: str
    status: str
    status_description: str = ""
    at: int = 0

    def stream(self) -> str:
        return node_stream(self.node_id)


class NodeEligibilityUpdated(Event):
    type: Literal["NodeEligibilityUpdated"] = "NodeEligibilityUpdated"
    category: ClassVar[str] = "Node"
    node_id: str
    eligibility: str

    def stream(self) -> str:
        return node_stream(self.node_id)


class NodeDrainUpdated(Event):
    type: Literal["NodeDrainUpdated"] = "NodeDrainUpdated"
    category: ClassVar[str] = "Node"
    node_id: str
    drain_strategy: DrainStrategy | None = None
    eligibility: str = ""

    def stream(self) -> str:
        return node_stream(self.node_id)


class NodeDeregistered(Event):
    type: Literal["NodeDeregistered"] = "NodeDeregistered"
    category: ClassVar[str] = "Node"
    node_id: str

    def stream(self) -> str:
        return node_stream(self.node_id)


# --- jobs ---
class JobRegistered(Event):
    """A new version of a job (or the same version re-registered with no spec change)."""

    type: Literal["JobRegistered"] = "JobRegistered"
    category: ClassVar[str] = "Job"
    job: Job

    def stream(self) -> str:
        return job_stream(self.job.namespace, self.job.id)


class JobDeregistered(Event):
    type: Literal["JobDeregistered"] = "JobDeregistered"
    category: ClassVar[str] = "Job"
    namespace: str
    job_id: str
    purge: bool = False

    def stream(self) -> str:
        return job_stream(self.namespace, self.job_id)


class JobStabilityUpdated(Event):
    """A version of a job marked stable or not (Nomad's job stable): the version itself, and
    the job too when it is the current one."""

    type: Literal["JobStabilityUpdated"] = "JobStabilityUpdated"
    category: ClassVar[str] = "Job"
    namespace: str
    job_id: str
    version: int
    stable: bool

    def stream(self) -> str:
        return job_stream(self.namespace, self.job_id)


class ScalingEventRegistered(Event):
    """A scale request recorded among its task group's scaling events (Nomad's
    ScalingEventRegisterRequest)."""

    type: Literal["ScalingEventRegistered"] = "ScalingEventRegistered"
    category: ClassVar[str] = "Job"
    namespace: str
    job_id: str
    task_group: str
    event: ScalingEvent

    def stream(self) -> str:
        return job_stream(self.namespace, self.job_id)


# --- evaluations ---
class EvalsUpserted(Event):
    """Evals created or updated (status, blocked, follow-ups), in one batch."""

    type: Literal["EvalsUpserted"] = "EvalsUpserted"
    category: ClassVar[str] = "Evaluation"
    evals: list[Evaluation]
    stream_name: str = "evals"

    def stream(self) -> str:
        return self.stream_name


# --- plans and allocations ---
_ALLOC_METRICS: dict[str, Any] = {"allocs": {"__all__": {"metrics"}}}


class PlanApplied(Event):
    """What the plan applier committed for one eval (possibly one chunk of a large plan):
    allocs placed or updated, stopped, preempted; deployment changes."""

    type: Literal["PlanApplied"] = "PlanApplied"
    category: ClassVar[str] = "Allocation"
    eval_id: str
    job_id: str = ""
    namespace: str = "default"
    allocs: list[Allocation] = Field(default_factory=list)
    stopped: list[Allocation] = Field(default_factory=list)
    preempted: list[Allocation] = Field(default_factory=list)
    deployment: Deployment | None = None
    deployment_updates: list[dict[str, str]] = Field(default_factory=list)
    at: int = 0
    # Allocs as stored in columns (drover.model.placements): decoding moves them into
    # `allocs`, so this is set only on the way in (and, in a replica's decoding, until the
    # reducer builds them into its state).
    placements: Placements | None = Field(default=None, exclude=True)
    # Whether decoding builds the allocs in `placements` at once.
    builds_placements: ClassVar[bool] = True
    # Placement metrics as JSON by alloc ID, for allocs whose `metrics` were never decoded (the
    # plan applier's, from a plan request: drover.scheduler.wire): stored as if they were.
    metrics_json: dict[str, str] = Field(default_factory=dict, exclude=True)

    def stream(self) -> str:
        return f"plan:{self.eval_id}"

    @model_validator(mode="after")
    def _take_placements(self) -> PlanApplied:
        if self.builds_placements:
            self.take_placements()
        return self

    def take_placements(self) -> list[Allocation]:
        """Every alloc of the event: those in `placements` built and moved into `allocs`."""
        if self.placements is not None:
            self.allocs = [*self.allocs, *self.placements.allocs()]
            self.placements = None
        return self.allocs

    def with_metrics(self) -> PlanApplied:
        """This event with the metrics in `metrics_json` decoded into its allocs (itself if
        there are none)."""
        texts = self.metrics_json
        if not texts or not any(a.metrics is None and a.id in texts for a in self.allocs):
            return self
        return self.model_copy(update={"allocs": with_metrics(self.allocs, texts), "metrics_json": {}})

    def to_json(self, *, metrics: bool = True) -> str:
        """The stored form: a plan of COLUMNS_FROM allocs or more has them in columns.
        `metrics`: False leaves the placement metrics out (see `metrics_object`)."""
        if len(self.allocs) < COLUMNS_FROM:
            if not metrics:
                return self.model_dump_json(by_alias=True, exclude_defaults=True, exclude=_ALLOC_METRICS)
            return self.with_metrics().model_dump_json(by_alias=True, exclude_defaults=True)
        body = self.model_dump_json(by_alias=True, exclude_defaults=True, exclude={"allocs"})
        encoded = encode_placements(self.allocs, metrics=metrics, metrics_json=self.metrics_json)
        return '{"Placements":' + encoded + ("}" if body == "{}" else "," + body[1:])

    def metrics_object(self) -> str | None:
        """The placement metrics as the log stores them beside the event: one JSON object by
        alloc ID (None if no alloc has any)."""
        return metrics_object(self.allocs, self.metrics_json)


class ReplicaPlanApplied(PlanApplied):
    """PlanApplied as replicas decode it: allocs without their metrics, and those stored in
    columns left in `placements` for the reducer, which builds them straight into a replica's
    state (`InMemoryState.place_columns`) and then into `allocs`. Read `take_placements()`,
    not `allocs`, before the event is applied."""

    builds_placements: ClassVar[bool] = False

    allocs: list[ReplicaAllocation] = Field(default_factory=list)  # type: ignore[assignment]
    stopped: list[ReplicaAllocation] = Field(default_factory=list)  # type: ignore[assignment]
    preempted: list[ReplicaAllocation] = Field(default_factory=list)  # type: ignore[assignment]
    placements: ReplicaPlacements | None = Field(default=None, exclude=True)  # type: ignore[assignment]


class AllocClientUpdate(NomadModel):
    id: str
    client_status: str
    client_description: str = ""
    task_states: dict[str, TaskState] | None = None
    deployment_status: AllocDeploymentStatus | None = None
    at: int = 0


class AllocsClientUpdated(Event):
    """Clients reported alloc status (running, complete, failed, ...), batched."""

    type: Literal["AllocsClientUpdated"] = "AllocsClientUpdated"
    category: ClassVar[str] = "Allocation"
    node_id: str = ""
    updates: list[AllocClientUpdate]

    def stream(self) -> str:
        return f"client:{self.node_id}" if self.node_id else "client"


class AllocsTransitioned(Event):
    """Server-side intents set on allocs (the node drainer's migrate), with the evals that act
    on them (Nomad's AllocUpdateDesiredTransition)."""

    type: Literal["AllocsTransitioned"] = "AllocsTransitioned"
    category: ClassVar[str] = "Allocation"
    transitions: dict[str, DesiredTransition]
    evals: list[Evaluation] = Field(default_factory=list)

    def stream(self) -> str:
        return "transitions"


class DeploymentUpserted(Event):
    type: Literal["DeploymentUpserted"] = "DeploymentUpserted"
    category: ClassVar[str] = "Deployment"
    deployment: Deployment

    def stream(self) -> str:
        return f"deployment:{self.deployment.id}"


class DeploymentUpdated(Event):
    """The deployment watcher's changes to a deployment: a new status (failed), or its canaries
    promoted; with the evals that act on it (Nomad's UpdateDeploymentStatus / Promotion)."""

    type: Literal["DeploymentUpdated"] = "DeploymentUpdated"
    category: ClassVar[str] = "Deployment"
    deployment_id: str
    status: str = ""
    status_description: str = ""
    promote: bool = False
    # The groups whose canaries are promoted; none named: every group with canaries.
    promote_groups: list[str] = Field(default_factory=list)
    evals: list[Evaluation] = Field(default_factory=list)
    at: int = 0

    def stream(self) -> str:
        return f"deployment:{self.deployment_id}"


class AllocRestartRequested(Event):
    """An operator asked for an alloc's tasks to be restarted in place (Nomad's alloc restart);
    the node's agent acts on it and reports the restart in the task events."""

    type: Literal["AllocRestartRequested"] = "AllocRestartRequested"
    category: ClassVar[str] = "Allocation"
    alloc_id: str
    request: AllocRestartRequest

    def stream(self) -> str:
        return f"restart:{self.alloc_id}"


# Every event but PlanApplied, which each reader decodes in a form of its own.
OTHER_EVENTS = (
    NodeRegistered
    | NodeStatusUpdated
    | NodeEligibilityUpdated
    | NodeDrainUpdated
    | NodeDeregistered
    | JobRegistered
    | JobDeregistered
    | JobStabilityUpdated
    | ScalingEventRegistered
    | EvalsUpserted
    | AllocsClientUpdated
    | AllocsTransitioned
    | DeploymentUpserted
    | DeploymentUpdated
    | AllocRestartRequested
    | JobRestartStarted
    | JobRestartSignaled
    | JobRestartUpdated
    | JobRestartDeleted
    | EvalsCollected
    | DeploymentsCollected
    | NodesCollected
    | JobCollected
)
AnyEvent = Annotated[OTHER_EVENTS | PlanApplied, Field(discriminator="type")]
AnyReplicaEvent = Annotated[OTHER_EVENTS | ReplicaPlanApplied, Field(discriminator="type")]

_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyEvent)
_REPLICA_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyReplicaEvent)


def evals_of(ev: Event) -> list[Evaluation]:
    """The evals an event creates or updates (for the broker)."""
    if isinstance(ev, (EvalsUpserted, AllocsTransitioned, DeploymentUpdated)):
        return ev.evals
    return []


def decode_event(
    data: dict[str, Any] | bytes | str, *, replica: bool = False, metrics: str | None = None
) -> Event:
    """Parse a stored event (its JSON form, with the `Type` discriminator); `replica` leaves
    out what only the projections keep (alloc metrics). `metrics`: the placement metrics the
    log stores beside the event (`encode_event_parts`), put into its allocs."""
    adapter = _REPLICA_ADAPTER if replica else _ADAPTER
    if isinstance(data, (bytes, str)):
        ev: Event = adapter.validate_json(data)
    else:
        ev = adapter.validate_python(data)
    if metrics is not None and not replica and isinstance(ev, PlanApplied):
        attach_metrics(ev.allocs, metrics)
    return ev


def encode_event(ev: Event) -> dict[str, Any]:
    return ev.model_dump(by_alias=True, mode="json")


def encode_event_json(ev: Event, *, metrics: bool = True) -> str:
    """The event as JSON without the members that hold their default (decoding restores them),
    which makes a placement about a third of its full size. With its placement metrics, it is
    whole (the form the log stored before it kept them apart); without, it is what the log
    stores and the relay publishes (`encode_event_parts`)."""
    body = (
        ev.to_json(metrics=metrics)
        if isinstance(ev, PlanApplied)
        else ev.model_dump_json(by_alias=True, exclude_defaults=True)
    )
    # `Type` is itself a default (each event's literal), so it is put back in front.
    return f'{{"Type":"{ev.type}"' + ("}" if body == "{}" else "," + body[1:])


def encode_event_parts(ev: Event) -> tuple[str, str | None]:
    """The event as the log stores it: its JSON without placement metrics (what the relay
    publishes: every consumer of the stream is a replica, and replicas drop them), and the
    metrics apart as one JSON object by alloc ID (None if it has none). `decode_event(data,
    metrics=...)` puts them back."""
    if isinstance(ev, PlanApplied):
        return encode_event_json(ev, metrics=False), ev.metrics_object()
    return encode_event_json(ev), None
