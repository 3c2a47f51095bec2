"""The event catalogue: every change to the cluster is one of these events, appended to the
log. Each is declared once, in the module of its aggregate (nodes, jobs, scaling, evals, plans,
allocs, deployments, job restarts, services, collection, variables, namespaces, acl,
operatorconfig), with all that it means (drover.model.events.base): its stream, its effect on
the state, the rows it reads, its Nomad stream events. The log position an event gets is the
cluster index (Nomad's raft index): the reducer stamps CreateIndex / ModifyIndex from it. The
table of every type, its writers and its effect is docs/events.md.
"""

from __future__ import annotations

import functools
import operator
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from drover.model.events.acl import (
    ACL_BOOTSTRAP_STREAM,
    ACLBootstrapped,
    ACLPolicyDeleted,
    ACLPolicyUpserted,
    ACLTokenDeleted,
    ACLTokenUpserted,
    acl_policy_stream,
    acl_token_stream,
)
from drover.model.events.allocs import (
    AllocClientUpdate,
    AllocRestartRequested,
    AllocsClientUpdated,
    AllocsTransitioned,
    keeps_client_status,
)
from drover.model.events.base import (
    EVENT_TYPES,
    Event,
    NewEvent,
    Reads,
    dispatch_stream,
    job_stream,
    node_stream,
    restart_stream,
)
from drover.model.events.collection import (
    Collected,
    DeploymentsCollected,
    EvalsCollected,
    JobCollected,
    NodesCollected,
    alloc_collectable,
)
from drover.model.events.deployments import DeploymentUpdated, DeploymentUpserted
from drover.model.events.evals import EvalsUpserted
from drover.model.events.jobs import JobDeregistered, JobRegistered, JobStabilityUpdated
from drover.model.events.namespaces import NamespaceDeleted, NamespaceUpserted, namespace_stream
from drover.model.events.nodes import (
    NodeDeregistered,
    NodeDrainUpdated,
    NodeEligibilityUpdated,
    NodeRegistered,
    NodeStatusUpdated,
)
from drover.model.events.operatorconfig import (
    SCHEDULER_CONFIG_STREAM,
    NodePoolDeleted,
    NodePoolUpserted,
    SchedulerConfigUpdated,
    node_pool_stream,
)
from drover.model.events.plans import PlanApplied, ReplicaPlanApplied
from drover.model.events.restarts import (
    JobRestartDeleted,
    JobRestartSignaled,
    JobRestartStarted,
    JobRestartUpdated,
)
from drover.model.events.scaling import ScalingEventRegistered
from drover.model.events.services import ServicesDeregistered, ServicesRegistered
from drover.model.events.variables import (
    VariableDeleted,
    VariableLockRenewed,
    VariableUpserted,
    variable_stream,
)
from drover.model.placements import attach_metrics

__all__ = [
    "ACL_BOOTSTRAP_STREAM",
    "EVENT_TYPES",
    "SCHEDULER_CONFIG_STREAM",
    "ACLBootstrapped",
    "ACLPolicyDeleted",
    "ACLPolicyUpserted",
    "ACLTokenDeleted",
    "ACLTokenUpserted",
    "AllocClientUpdate",
    "AllocRestartRequested",
    "AllocsClientUpdated",
    "AllocsTransitioned",
    "Collected",
    "DeploymentUpdated",
    "DeploymentUpserted",
    "DeploymentsCollected",
    "EvalsCollected",
    "EvalsUpserted",
    "Event",
    "JobCollected",
    "JobDeregistered",
    "JobRegistered",
    "JobRestartDeleted",
    "JobRestartSignaled",
    "JobRestartStarted",
    "JobRestartUpdated",
    "JobStabilityUpdated",
    "NamespaceDeleted",
    "NamespaceUpserted",
    "NewEvent",
    "NodeDeregistered",
    "NodeDrainUpdated",
    "NodeEligibilityUpdated",
    "NodePoolDeleted",
    "NodePoolUpserted",
    "NodeRegistered",
    "NodeStatusUpdated",
    "NodesCollected",
    "PlanApplied",
    "Reads",
    "ReplicaPlanApplied",
    "ScalingEventRegistered",
    "SchedulerConfigUpdated",
    "ServicesDeregistered",
    "ServicesRegistered",
    "VariableDeleted",
    "VariableLockRenewed",
    "VariableUpserted",
    "acl_policy_stream",
    "acl_token_stream",
    "alloc_collectable",
    "decode_event",
    "decoder",
    "dispatch_stream",
    "encode_event",
    "encode_event_json",
    "encode_event_parts",
    "job_stream",
    "keeps_client_status",
    "namespace_stream",
    "node_pool_stream",
    "node_stream",
    "restart_stream",
    "variable_stream",
]

_DECODERS: dict[tuple[tuple[type[Event], ...], int], TypeAdapter[Any]] = {}


def decoder(*decodings: type[Event]) -> TypeAdapter[Any]:
    """What decodes any stored event (its JSON form, with the `Type` discriminator) into its
    declared class, or into one of `decodings` (another decoding of a declared type, such as a
    replica's lean PlanApplied) for its type."""
    key = (decodings, len(EVENT_TYPES))
    adapter = _DECODERS.get(key)
    if adapter is None:
        by_type: dict[str, type[Event]] = dict(EVENT_TYPES)
        for cls in decodings:
            by_type[cls.model_fields["type"].default] = cls
        union = functools.reduce(operator.or_, by_type.values())
        adapter = _DECODERS[key] = TypeAdapter(Annotated[union, Field(discriminator="type")])  # type: ignore[arg-type]
    return adapter


def decode_event(
    data: dict[str, Any] | bytes | str, *, replica: bool = False, metrics: str | None = None
) -> Event:
    """Parse a stored event (its JSON form, with the `Type` discriminator); `replica` leaves
    out what only the projections keep (alloc metrics). `metrics`: the placement metrics the
    log stores beside the event (`encode_event_parts`), put into its allocs."""
    adapter = decoder(ReplicaPlanApplied) if replica else decoder()
    if isinstance(data, (bytes, str)):
        event: Event = adapter.validate_json(data)
    else:
        event = adapter.validate_python(data)
    if metrics is not None and not replica and isinstance(event, PlanApplied):
        attach_metrics(event.allocs, metrics)
    return event


def encode_event(event: Event) -> dict[str, Any]:
    return event.model_dump(by_alias=True, mode="json")


def encode_event_json(event: Event, *, metrics: bool = True) -> str:
    """The event as JSON without the members that hold their default (decoding restores them),
    which makes a placement about a third of its full size. With its placement metrics, it is
    whole (the form the log stored before it kept them apart); without, it is what the log
    stores and the relay publishes (`encode_event_parts`)."""
    body = event.to_json(metrics=metrics)
    # `Type` is itself a default (each event's literal), so it is put back in front.
    return f'{{"Type":"{event.type}"' + ("}" if body == "{}" else "," + body[1:])


def encode_event_parts(event: Event) -> tuple[str, str | None]:
    """The event as the log stores it: its JSON without placement metrics (what the relay
    publishes: every consumer of the stream is a replica, and replicas drop them), and the
    metrics apart as one JSON object by alloc ID (None if it has none). `decode_event(data,
    metrics=...)` puts them back."""
    return encode_event_json(event, metrics=False), event.metrics_object()
