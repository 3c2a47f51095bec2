"""A batch of replica allocs' JSON spliced from one skeleton (drover.model.allocjson): byte for
byte what each alloc's own serializer writes, whatever members vary across the batch, lean or
whole, through a replica that placed them from columns as the feed's does."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from drover.model.alloc import (
    AllocDeploymentStatus,
    AllocRestartRequest,
    ReplicaAllocation,
    TaskState,
)
from drover.model.allocated import AllocatedResources
from drover.model.allocjson import SPLICE_FROM, allocs_json
from drover.model.base import copy_with
from drover.model.changes import TrackedState
from drover.model.events import PlanApplied, decode_event, encode_event_json
from drover.model.job import Resources
from drover.model.streamevents import stream_event_texts, stream_events

WEB = Resources(cpu=250, memory_mb=64, disk_mb=300)


def _template() -> ReplicaAllocation:
    doc = {
        "ID": "a0",
        "EvalID": "e1",
        "Name": "web.web[0]",
        "NodeID": "n0",
        "NodeName": "node-0",
        "JobID": "web",
        "TaskGroup": "web",
        "Resources": WEB.model_dump(by_alias=True),
        "CreateTime": 5,
        "ModifyTime": 5,
    }
    return ReplicaAllocation.model_validate(doc)


def _own(a: ReplicaAllocation) -> bytes:
    return bytes(a.__pydantic_serializer__.to_json(a, by_alias=True))


# What each alloc i of a batch holds beside its template: the members that vary.
Vary = Callable[[int], dict[str, Any]]
BATCHES: dict[str, Vary] = {
    "ids, names and nodes (a plan's placements)": lambda i: {
        "id": f"a{i}",
        "name": f"web.web[{i}]",
        "node_id": f"n{i % 5}",
        "node_name": f"node-{i % 5}",
    },
    "strings to escape": lambda i: {"id": f'a"{i}\\\n\x01é', "node_name": "naïve \u2028 ✓"},
    "numbers": lambda i: {"id": f"a{i}", "modify_index": i * 1_000_000_007, "job_version": i},
    "models and collections": lambda i: {
        "id": f"a{i}",
        "client_status": "running",
        "task_states": {"web": TaskState(state="running", restarts=i, started_at=i * 10**9)},
        "deployment_status": AllocDeploymentStatus(healthy=bool(i % 2), canary=i == 3),
        "preempted_allocations": [f"p{j}" for j in range(i % 3)],
        "allocated_resources": AllocatedResources() if i % 2 else None,
    },
    "a held member set on some": lambda i: {
        "id": f"a{i}",
        **({"restart_request": AllocRestartRequest(id="r1", task_name="web")} if i == 4 else {}),
    },
    "nothing varies": lambda i: {},
    # Before the varying member and after it: neither may be taken for the marker.
    "a shared member holding a marker's text": lambda i: {
        "eval_id": "\x00splice 0\x00",
        "node_name": f"node-{i}",
        "desired_description": "\x00splice 0\x00",
    },
}


@pytest.mark.parametrize("vary", BATCHES.values(), ids=BATCHES.keys())
@pytest.mark.parametrize("count", [1, SPLICE_FROM - 1, SPLICE_FROM, 40])
def test_a_batch_is_written_as_each_alloc_writes_itself(vary: Vary, count: int) -> None:
    template = _template()
    allocs = [copy_with(template, vary(i)) for i in range(count)]
    assert allocs_json(allocs) == [_own(a) for a in allocs]


@pytest.mark.parametrize("vary", BATCHES.values(), ids=BATCHES.keys())
def test_lean_allocs_of_a_replica_are_written_as_they_write_themselves(vary: Vary) -> None:
    from drover.model.state import InMemoryState

    state = InMemoryState(drop_metrics=True, owns_events=True)
    template = _template()
    for i in range(30):
        state.upsert_alloc(copy_with(template, {**vary(i), "id": f"lean{i}"}))
    held = [a for i in range(30) if (a := state.alloc(f"lean{i}")) is not None]
    assert len(held) == 30
    assert allocs_json(held) == [_own(a) for a in held]


@pytest.mark.parametrize("count", [3, 40])
def test_a_plan_in_columns_reaches_the_stream_as_its_allocs_documents(count: int) -> None:
    """The feed's path: a plan stored in columns, decoded as a replica decodes it, applied to a
    replica like the feed's; its stream events' JSON is each alloc's document as `to_api`
    gives it (the stream's dict form), whether spliced (40 allocs) or not (3)."""
    allocs = [
        copy_with(_template(), {"id": f"a{i}", "name": f"web.web[{i}]", "node_id": f"n{i % 3}"})
        for i in range(count)
    ]
    event = decode_event(
        encode_event_json(PlanApplied(eval_id="e1", job_id="web", allocs=allocs, at=5)), replica=True
    )
    as_texts = TrackedState(drop_metrics=True, owns_events=True)
    as_dicts = TrackedState(drop_metrics=True, owns_events=True)
    texts = stream_event_texts(as_texts, 1, event)
    dicts = stream_events(as_dicts, 1, event)
    assert len(texts) == count and all(type(a) is ReplicaAllocation for a in as_texts.allocs.values())
    assert [t for _, t in texts] == [json.dumps(e, separators=(",", ":")).encode() for e in dicts]
