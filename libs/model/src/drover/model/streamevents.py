"""Nomad's event stream from Drover's log: what one logged event is as the events of
`/v1/event/stream` (Topic, Type, Key, Namespace, FilterKeys, Index, Payload).

Drover's events carry what changed (a client's report is a status and task states, not the
alloc), while Nomad's stream carries whole documents. So an event is applied to a state that
records the rows it changes (`TrackedState`), as Nomad derives its stream from the changed
table rows, and those objects are read from it afterwards, in the form the read endpoints
answer with; an object the event removes is described as it was just before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from drover.model.alloc import ReplicaAllocation
from drover.model.allocjson import allocs_json
from drover.model.changes import Changes, TrackedState
from drover.model.events import EVENT_TYPES, Event
from drover.model.reducer import apply

# json.dumps' own escaping of a string (ensure_ascii), quotes included.
_string: Callable[[str], str] = json.encoder.encode_basestring_ascii

# Each topic and the table its objects are the rows of, in the order a frame lists them.
# Tables without a topic (job versions, scaling events) have no stream events.
TOPIC_TABLES = (
    ("Node", "nodes"),
    ("Job", "jobs"),
    ("Deployment", "deployments"),
    ("Evaluation", "evals"),
    ("Allocation", "allocs"),
    ("JobRestart", "job_restarts"),
    ("Service", "services"),
    ("NodePool", "node_pools"),
)
TOPICS = ("Job", "Evaluation", "Allocation", "Deployment", "Node", "JobRestart", "Service", "NodePool")
# Service registrations are typed by what happened to them (Nomad's ServiceRegistration and
# ServiceDeregistration), whichever event did it: a node down or an alloc ended removes them too.
_SERVICE_TYPES = ("ServiceRegistration", "ServiceDeregistration")
ALL = "*"


def has_stream_events(event_type: str) -> bool:
    """Whether events of `event_type` have Nomad stream events (Nomad's stream carries none for
    some requests: scaling events, garbage collection)."""
    cls = EVENT_TYPES.get(event_type)
    return cls is not None and cls.nomad_event_type is not None


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


def _describe(topic: str, typ: str, index: int, obj: Any, doc: Any) -> dict[str, Any]:
    if topic == "Node":
        return _event(topic, typ, obj.id, "", [], index, doc)
    if topic == "NodePool":
        return _event(topic, typ, obj.name, "", [], index, doc)
    if topic == "Job":
        return _event(topic, typ, obj.id, obj.namespace, [], index, doc)
    if topic in ("Evaluation", "Allocation"):
        return _event(topic, typ, obj.id, obj.namespace, [obj.job_id, obj.deployment_id or ""], index, doc)
    if topic == "Service":
        return _event(topic, typ, obj.id, obj.namespace, [obj.job_id, obj.service_name], index, doc)
    # Deployment, JobRestart: keyed by their ID, found by their job's too.
    return _event(topic, typ, obj.id, obj.namespace, [obj.job_id], index, doc)


def stream_events(state: TrackedState, position: int, event: Event) -> list[dict[str, Any]]:
    """Apply `event` (logged at `position`) to `state`, and answer its events in Nomad's stream
    form: each object it changed once, by topic (nodes, jobs, deployments, evals, allocs,
    restarts), typed after the event (`nomad_event_type`)."""
    typ = event.nomad_event_type or ""
    return [
        _describe(topic, _type(topic, typ, removed), position, obj, obj.to_api())
        for topic, obj, removed in _changed_objects(state, position, event)
    ]


def _type(topic: str, typ: str, removed: bool) -> str:
    return _SERVICE_TYPES[removed] if topic == "Service" else typ


def stream_event_texts(
    state: TrackedState, position: int, event: Event
) -> list[tuple[dict[str, Any], bytes]]:
    """`stream_events`, each as its JSON (compact, UTF-8), beside the event without its Payload
    (what `matches` reads). The JSON is the event's dict's, the payload written by pydantic in
    one step, as bytes: four times cheaper than building the document and encoding it, and
    bytes are what is sent (a frame of 1,000 allocs is a megabyte: each copy of it counts)."""
    typ = event.nomad_event_type or ""
    changed = _changed_objects(state, position, event)
    out = []
    for (topic, obj, removed), doc in zip(changed, _docs([obj for _, obj, _ in changed]), strict=True):
        head = _describe(topic, _type(topic, typ, removed), position, obj, None)
        del head["Payload"]
        out.append(
            (head, b"".join((_head_json(head).encode(), b',"Payload":{"', topic.encode(), b'":', doc, b"}}")))
        )
    return out


def _docs(objs: list[Any]) -> list[bytes]:
    """Each object's JSON by its aliases; a replica's allocs together (`allocs_json`: a plan's
    are spliced from one skeleton)."""
    written = iter(allocs_json([obj for obj in objs if type(obj) is ReplicaAllocation]))
    return [next(written) if type(obj) is ReplicaAllocation else _doc(obj) for obj in objs]


def _doc(obj: Any) -> bytes:
    return bytes(obj.__pydantic_serializer__.to_json(obj, by_alias=True))


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


def _changed_objects(state: TrackedState, position: int, event: Event) -> list[tuple[str, Any, bool]]:
    """Apply `event` to `state`; the objects it changed, by topic, as they are after it, then those
    it removed (a purge, a node deregistered, a restart collected) as they were last."""
    if not isinstance(state, TrackedState):
        raise TypeError("stream events are derived from a TrackedState's changes")
    if event.nomad_event_type is None:
        apply(state, position, event)
        return []
    changes = state.changes = Changes()
    try:
        apply(state, position, event)
    finally:
        state.changes = None
    out: list[tuple[str, Any, bool]] = []
    gone: list[tuple[str, Any, bool]] = []
    getters = _getters(state)
    for topic, table in TOPIC_TABLES:
        deleted = changes.deleted.get(table, {})
        for key in changes.written.get(table, ()):
            obj = getters[table](key)
            if obj is not None:
                out.append((topic, obj, False))
            elif key in deleted:
                gone.append((topic, deleted.pop(key), True))
        gone.extend((topic, obj, True) for obj in deleted.values())
    return out + gone


def _getters(state: TrackedState) -> dict[str, Callable[[Any], Any]]:
    return {
        "nodes": state.nodes.get,
        "jobs": state.jobs.get,
        "deployments": state.deployments.get,
        "evals": state.evals.get,
        "allocs": state.allocs.get,
        "job_restarts": state.job_restarts.get,
        "services": state.services.get,
        "node_pools": state.node_pools.get,
    }


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
