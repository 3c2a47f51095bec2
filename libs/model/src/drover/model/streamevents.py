"""Nomad's event stream from Drover's log: what one logged event is as the events of
`/v1/event/stream` (Topic, Type, Key, Namespace, FilterKeys, Index, Payload).

Drover's events carry what changed (a client's report is a status and task states, not the
alloc), while Nomad's stream carries whole documents. So an event is applied to a state (the
one reducer), and the objects it touched are read from it afterwards, in the form the read
endpoints answer with; an object the event removes is read before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from drover.model.eventbase import Event
from drover.model.events import (
    AllocRestartRequested,
    AllocsClientUpdated,
    AllocsTransitioned,
    DeploymentUpdated,
    DeploymentUpserted,
    EvalsUpserted,
    JobDeregistered,
    JobRegistered,
    JobRestartDeleted,
    JobRestartSignaled,
    JobRestartStarted,
    JobRestartUpdated,
    JobStabilityUpdated,
    NodeDeregistered,
    NodeDrainUpdated,
    NodeEligibilityUpdated,
    NodeRegistered,
    NodeStatusUpdated,
    PlanApplied,
)
from drover.model.reducer import apply
from drover.model.state import InMemoryState

# json.dumps' own escaping of a string (ensure_ascii), quotes included.
_string: Callable[[str], str] = json.encoder.encode_basestring_ascii

TOPICS = ("Job", "Evaluation", "Allocation", "Deployment", "Node", "JobRestart")
ALL = "*"

# Drover's event type -> the Type its stream events carry, for every topic it touches (Nomad
# names an event after the request that made the change, for every object it changed). Events
# missing here (scaling events, garbage collection) have no stream events.
STREAM_TYPES: dict[str, str] = {
    "NodeRegistered": "NodeRegistration",
    "NodeDeregistered": "NodeDeregistration",
    "NodeEligibilityUpdated": "NodeEligibility",
    "NodeDrainUpdated": "NodeDrain",
    "NodeStatusUpdated": "NodeStreamEvent",
    "JobRegistered": "JobRegistered",
    "JobDeregistered": "JobDeregistered",
    "JobStabilityUpdated": "JobStabilityUpdated",
    "EvalsUpserted": "EvaluationUpdated",
    "PlanApplied": "PlanResult",
    "AllocsClientUpdated": "AllocationUpdated",
    "AllocRestartRequested": "AllocationUpdated",
    "AllocsTransitioned": "AllocationUpdateDesiredStatus",
    "DeploymentUpserted": "DeploymentStatusUpdate",
    "DeploymentUpdated": "DeploymentStatusUpdate",
    "JobRestartStarted": "JobRestartStarted",
    "JobRestartSignaled": "JobRestartSignaled",
    "JobRestartUpdated": "JobRestartUpdated",
    "JobRestartDeleted": "JobRestartDeleted",
}


@dataclass
class Touched:
    """The objects one event changes, by kind."""

    jobs: list[tuple[str, str]] = field(default_factory=list)
    evals: list[str] = field(default_factory=list)
    allocs: list[str] = field(default_factory=list)
    deployments: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    restarts: list[str] = field(default_factory=list)


def _touched(ev: Event, state: InMemoryState) -> Touched:
    """What `ev` changes; PlanApplied's allocs are read after it is applied (a replica's
    decoding builds them only then)."""
    t = Touched()
    if isinstance(ev, NodeRegistered):
        t.nodes.append(ev.node.id)
    elif isinstance(ev, (NodeStatusUpdated, NodeEligibilityUpdated, NodeDrainUpdated, NodeDeregistered)):
        t.nodes.append(ev.node_id)
    elif isinstance(ev, JobRegistered):
        t.jobs.append((ev.job.namespace, ev.job.id))
    elif isinstance(ev, (JobDeregistered, JobStabilityUpdated)):
        t.jobs.append((ev.namespace, ev.job_id))
    elif isinstance(ev, EvalsUpserted):
        t.evals.extend(e.id for e in ev.evals)
    elif isinstance(ev, PlanApplied):
        t.deployments.extend(u.get("DeploymentID", "") for u in ev.deployment_updates)
        if ev.deployment is not None:
            t.deployments.insert(0, ev.deployment.id)
    elif isinstance(ev, AllocsClientUpdated):
        t.allocs.extend(u.id for u in ev.updates)
        # A report of deployment health changes the deployment's counts too.
        for u in ev.updates:
            a = state.alloc(u.id)
            if u.deployment_status is not None and a is not None and a.deployment_id:
                t.deployments.append(a.deployment_id)
    elif isinstance(ev, AllocsTransitioned):
        t.allocs.extend(ev.transitions)
        t.evals.extend(e.id for e in ev.evals)
    elif isinstance(ev, AllocRestartRequested):
        t.allocs.append(ev.alloc_id)
    elif isinstance(ev, DeploymentUpserted):
        t.deployments.append(ev.deployment.id)
    elif isinstance(ev, DeploymentUpdated):
        t.deployments.append(ev.deployment_id)
        t.evals.extend(e.id for e in ev.evals)
    elif isinstance(ev, JobRestartStarted):
        t.restarts.append(ev.restart.id)
    elif isinstance(ev, JobRestartSignaled):
        t.restarts.append(ev.restart_id)
        t.allocs.extend(ev.alloc_ids())
    elif isinstance(ev, (JobRestartUpdated, JobRestartDeleted)):
        t.restarts.append(ev.restart_id)
    return t


def _plan_allocs(ev: PlanApplied) -> list[str]:
    placed = ev.take_placements() if ev.placements is not None else ev.allocs
    return [a.id for a in (*placed, *ev.stopped, *ev.preempted)]


def _event(
    topic: str, typ: str, key: str, ns: str, filter_keys: list[str], index: int, doc: Any
) -> dict[str, Any]:
    return {
        "Topic": topic,
        "Type": typ,
        "Key": key,
        "Namespace": ns,
        "FilterKeys": [k for k in filter_keys if k] or None,
        "Index": index,
        "Payload": {topic: doc},
    }


def _docs(state: InMemoryState, t: Touched) -> dict[tuple[str, str], Any]:
    """The touched objects still in the state, by (topic, key), as the read endpoints give them."""
    out: dict[tuple[str, str], Any] = {}
    getters: list[tuple[str, list[Any], Callable[[Any], Any]]] = [
        ("Node", t.nodes, state.node),
        ("Job", t.jobs, lambda k: state.job(*k)),
        ("Deployment", t.deployments, state.deployment),
        ("Evaluation", t.evals, state.eval),
        ("Allocation", t.allocs, state.alloc),
        ("JobRestart", t.restarts, state.job_restart),
    ]
    for topic, keys, get in getters:
        for k in keys:
            obj = get(k)
            if obj is not None:
                out[(topic, k if isinstance(k, str) else k[1])] = obj
    return out


def _describe(topic: str, typ: str, index: int, obj: Any, doc: Any) -> dict[str, Any]:
    if topic == "Node":
        return _event(topic, typ, obj.id, "", [], index, doc)
    if topic == "Job":
        return _event(topic, typ, obj.id, obj.namespace, [], index, doc)
    if topic in ("Evaluation", "Allocation"):
        return _event(topic, typ, obj.id, obj.namespace, [obj.job_id, obj.deployment_id or ""], index, doc)
    # Deployment, JobRestart: keyed by their ID, found by their job's too.
    return _event(topic, typ, obj.id, obj.namespace, [obj.job_id], index, doc)


def stream_events(state: InMemoryState, position: int, ev: Event) -> list[dict[str, Any]]:
    """Apply `ev` (logged at `position`) to `state`, and answer its events in Nomad's stream
    form: each object it touched once, by topic (nodes, jobs, deployments, evals, allocs, restarts)."""
    typ = STREAM_TYPES.get(ev.type, "")
    return [
        _describe(topic, typ, position, obj, obj.to_api())
        for topic, obj in _touched_objects(state, position, ev)
    ]


def stream_event_texts(state: InMemoryState, position: int, ev: Event) -> list[tuple[dict[str, Any], bytes]]:
    """`stream_events`, each as its JSON (compact, UTF-8), beside the event without its Payload
    (what `matches` reads). The JSON is the event's dict's, the payload written by pydantic in
    one step, as bytes: four times cheaper than building the document and encoding it, and
    bytes are what is sent (a frame of 1,000 allocs is a megabyte: each copy of it counts)."""
    typ = STREAM_TYPES.get(ev.type, "")
    out = []
    for topic, obj in _touched_objects(state, position, ev):
        head = _describe(topic, typ, position, obj, None)
        del head["Payload"]
        doc = obj.__pydantic_serializer__.to_json(obj, by_alias=True)
        out.append(
            (head, b"".join((_head_json(head).encode(), b',"Payload":{"', topic.encode(), b'":', doc, b"}}")))
        )
    return out


def _head_json(h: dict[str, Any]) -> str:
    """The event's members before its Payload, as json.dumps writes them (compact, ASCII), and
    without its closing brace. Written here: json.dumps builds an encoder for every call, which
    took a quarter of describing a placement."""
    keys = h["FilterKeys"]
    fk = "null" if keys is None else "[" + ",".join(map(_string, keys)) + "]"
    return (
        f'{{"Topic":{_string(h["Topic"])},"Type":{_string(h["Type"])},"Key":{_string(h["Key"])},'
        f'"Namespace":{_string(h["Namespace"])},"FilterKeys":{fk},"Index":{int(h["Index"])}'
    )


def _touched_objects(state: InMemoryState, position: int, ev: Event) -> list[tuple[str, Any]]:
    """Apply `ev` to `state`; the objects it touched, by topic, as they are after it (or were
    last, for those it removed)."""
    if ev.type not in STREAM_TYPES:
        apply(state, position, ev)
        return []
    touched = _touched(ev, state)
    before = _docs(state, touched)
    apply(state, position, ev)
    if isinstance(ev, PlanApplied):
        touched.allocs = _plan_allocs(ev)
    after = _docs(state, touched)
    # What the event removed (a purge, a node deregistered, a restart collected) is described
    # as it was last.
    gone = {k: v for k, v in before.items() if k not in after}
    return [(topic, obj) for (topic, _), obj in {**after, **gone}.items()]


def parse_topics(values: list[str]) -> tuple[dict[str, set[str]], list[str]]:
    """`topic=Topic:Key` query values as {topic: keys}, and every problem found. No value means
    every topic; a bare Topic means every key of it."""
    topics: dict[str, set[str]] = {}
    problems: list[str] = []
    for value in values or [ALL]:
        parts = value.split(":")
        if len(parts) > 2 or not parts[0] or (len(parts) == 2 and not parts[1]):
            problems.append(f"Invalid topic {value!r}: expected Topic or Topic:Key")
            continue
        name, key = parts[0], parts[1] if len(parts) == 2 else ALL
        if name != ALL and name not in TOPICS:
            problems.append(f"Unknown topic {name!r}: one of {', '.join((*TOPICS, ALL))}")
            continue
        topics.setdefault(name, set()).add(key)
    return topics, problems


def matches(event: dict[str, Any], topics: dict[str, set[str]], namespace: str) -> bool:
    """Whether a subscriber to `topics` in `namespace` is sent `event` (Nomad's rules: an event
    without a namespace goes to every namespace; `*` is every namespace, topic and key)."""
    ns = event["Namespace"]
    if namespace != ALL and ns and ns != namespace:
        return False
    keys = topics.get(event["Topic"], set()) | topics.get(ALL, set())
    if ALL in keys or event["Key"] in keys:
        return True
    return any(k in keys for k in event["FilterKeys"] or ())
