"""A plan's allocs stored in columns: every kind of plan decodes, in full and as replicas
decode it, to exactly the allocs it was written from, and reduces to the same state as the
list form."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from drover.model import Allocation
from drover.model.alloc import (
    AllocDeploymentStatus,
    AllocMetric,
    DesiredTransition,
    NodeScoreMeta,
    ReplicaAllocation,
    RescheduleEvent,
    RescheduleTracker,
)
from drover.model.events import (
    PlanApplied,
    ReplicaPlanApplied,
    decode_event,
    encode_event_json,
    encode_event_parts,
)
from drover.model.job import Resources
from drover.model.placements import COLUMNS_FROM
from drover.model.reducer import apply
from drover.model.state import InMemoryState

WEB = Resources(cpu=250, memory_mb=64, disk_mb=300)


def _alloc(i: int, **kw: object) -> Allocation:
    fields: dict[str, object] = {
        "id": f"a{i:04d}",
        "eval_id": "e1",
        "name": f"web.web[{i}]",
        "node_id": f"n{i % 7}",
        "node_name": f"node-{i % 7}",
        "job_id": "web",
        "task_group": "web",
        "resources": WEB,
        "metrics": AllocMetric(
            nodes_evaluated=i, score_meta_data=[NodeScoreMeta(node_id=f"n{i % 7}", norm_score=i / 100)]
        ),
        "create_time": 5,
        "modify_time": 5,
    }
    fields.update(kw)
    return Allocation(**fields)  # type: ignore[arg-type]


def _plan(n: int, vary: Callable[[int], dict[str, object]] = lambda i: {}) -> list[Allocation]:
    return [_alloc(i, **vary(i)) for i in range(n)]


PLANS: dict[str, list[Allocation]] = {
    "alike": _plan(40),
    "one column": _plan(COLUMNS_FROM, lambda i: {"node_id": "n1", "node_name": "node-1", "name": "x"}),
    "two groups": _plan(
        30, lambda i: {"task_group": "db", "resources": Resources(cpu=500, memory_mb=256)} if i % 3 else {}
    ),
    "canaries and reschedules": _plan(
        20,
        lambda i: {
            "deployment_id": "d1",
            "deployment_status": AllocDeploymentStatus(canary=True) if i < 4 else None,
            "previous_allocation": f"old{i}" if i % 2 else "",
            "reschedule_tracker": RescheduleTracker(
                events=[RescheduleEvent(prev_alloc_id=f"old{i}", delay=i)]
            )
            if i % 2
            else None,
        },
    ),
    "updates in place": _plan(
        24,
        lambda i: {
            "create_index": 7 + i,
            "modify_index": 9,
            "client_status": "running" if i % 2 else "pending",
            "desired_transition": DesiredTransition(migrate=True) if i == 5 else DesiredTransition(),
            "metrics": None if i % 4 else AllocMetric(nodes_evaluated=1),
        },
    ),
    "no metrics": _plan(16, lambda i: {"metrics": None}),
    "few": _plan(COLUMNS_FROM - 1),
}


@pytest.mark.parametrize("allocs", PLANS.values(), ids=PLANS.keys())
def test_columns_decode_to_the_allocs_written(allocs: list[Allocation]) -> None:
    stop = _alloc(999, desired_status="stop", metrics=None)
    event = PlanApplied(eval_id="e1", job_id="web", allocs=allocs, stopped=[stop], at=5)
    stored = encode_event_json(event)
    doc = json.loads(stored)
    assert ("Placements" in doc) is (len(allocs) >= COLUMNS_FROM)
    assert ("Allocs" in doc) is (len(allocs) < COLUMNS_FROM)
    assert doc["Stopped"][0]["ID"] == "a0999"

    full = decode_event(stored)
    assert isinstance(full, PlanApplied) and full.placements is None
    assert full == event
    assert [a.model_dump() for a in full.allocs] == [a.model_dump() for a in allocs]
    assert encode_event_json(full) == stored  # a decoded event is stored as it was

    lean = decode_event(stored, replica=True)
    assert isinstance(lean, ReplicaPlanApplied)
    # A replica's decoding leaves the allocs in columns for the reducer to build.
    assert (lean.placements is not None) is (len(allocs) >= COLUMNS_FROM)
    assert all(type(a) is ReplicaAllocation and a.metrics is None for a in lean.take_placements())
    assert lean.placements is None
    assert [a.model_dump(exclude={"metrics"}) for a in lean.allocs] == [
        a.model_dump(exclude={"metrics"}) for a in allocs
    ]


@pytest.mark.parametrize("allocs", PLANS.values(), ids=PLANS.keys())
@pytest.mark.parametrize("as_json", [False, True], ids=["decoded", "passed on as JSON"])
def test_the_log_keeps_metrics_apart_and_puts_them_back(allocs: list[Allocation], as_json: bool) -> None:
    """What the log stores (and the relay publishes) holds no placement metrics; they are kept
    beside it by alloc ID, from decoded metrics or from the texts a plan applier passes on,
    and a full decoding puts them back: the event is whole again, in either form."""
    stop = _alloc(999, desired_status="stop", metrics=None)
    event = PlanApplied(eval_id="e1", job_id="web", allocs=allocs, stopped=[stop], at=5)
    if as_json:
        texts = {
            a.id: a.metrics.model_dump_json(by_alias=True, exclude_defaults=True) for a in allocs if a.metrics
        }
        event = event.model_copy(
            update={"allocs": [a.model_copy(update={"metrics": None}) for a in allocs], "metrics_json": texts}
        )
    data, metrics = encode_event_parts(event)
    assert "Metrics" not in data and "NodesEvaluated" not in data
    with_metrics = {a.id for a in allocs if a.metrics is not None}
    if with_metrics:
        assert metrics is not None and set(json.loads(metrics)) == with_metrics
    else:
        assert metrics is None
    assert len(data) + len(metrics or "") <= len(encode_event_json(event)) + 2

    full = decode_event(data, metrics=metrics)
    assert isinstance(full, PlanApplied)
    assert [a.model_dump() for a in full.allocs] == [a.model_dump() for a in allocs]
    assert encode_event_json(full) == encode_event_json(event)  # whole, as before it was split
    assert encode_event_parts(full) == (data, metrics)
    # Without them, the allocs decode as ever, their metrics unset.
    bare = decode_event(data)
    assert isinstance(bare, PlanApplied) and all(a.metrics is None for a in bare.allocs)
    lean = decode_event(data, replica=True, metrics=metrics)
    assert isinstance(lean, ReplicaPlanApplied)
    assert [a.id for a in lean.take_placements()] == [a.id for a in allocs]


def test_columns_are_smaller_and_hold_only_what_differs() -> None:
    allocs = PLANS["alike"]
    event = PlanApplied(eval_id="e1", job_id="web", allocs=allocs)
    stored = json.loads(encode_event_json(event))["Placements"]
    assert set(stored["Columns"]) == {"ID", "Name", "NodeID", "NodeName"}
    assert stored["Template"]["Resources"] == {"CPU": 250, "MemoryMB": 64, "DiskMB": 300}
    assert "DesiredStatus" not in stored["Template"]  # defaults are left out, as in the list form
    assert len(json.loads(stored["Metrics"])) == len(allocs)
    as_list = event.model_dump_json(by_alias=True, exclude_defaults=True)
    assert len(encode_event_json(event)) < len(as_list) * 0.7


@pytest.mark.parametrize("plan", ["canaries and reschedules", "two groups"])
@pytest.mark.parametrize("replica", [False, True], ids=["full", "replica"])
def test_columns_and_list_reduce_to_the_same_state(replica: bool, plan: str) -> None:
    """Both stored forms of one plan (logs written before columns hold the list form) give the
    same state, placing and then updating allocs."""
    placed = PLANS[plan]
    update = [a.model_copy(update={"client_status": "running", "metrics": None}) for a in placed]
    states, usage = [], []
    for columns in (True, False):
        state = InMemoryState(drop_metrics=replica)
        for pos, allocs in enumerate((placed, update), start=1):
            event = PlanApplied(eval_id=f"e{pos}", job_id="web", allocs=allocs, at=pos)
            stored = (
                encode_event_json(event)
                if columns
                else '{"Type":"PlanApplied",'
                + event.model_dump_json(by_alias=True, exclude_defaults=True)[1:]
            )
            assert ("Placements" in stored) is columns
            apply(state, pos, decode_event(stored, replica=replica))
        states.append({k: a.model_dump() for k, a in state.allocs.items()})
        usage.append({f"n{i}": state.node_usage(f"n{i}") for i in range(7)})
    assert states[0] == states[1]
    assert usage[0] == usage[1] and sum(u[0] for u in usage[0].values()) == sum(
        a.resources.cpu for a in placed
    )
    assert {k: a["resources"] for k, a in states[0].items()} == {
        a.id: a.resources.model_dump() for a in placed
    }
    assert len(states[0]) == len(placed)
    assert all(a["modify_index"] == 2 and a["create_index"] == 1 for a in states[0].values())


def test_replica_allocs_share_the_template_and_change_only_by_copy() -> None:
    stored = encode_event_json(PlanApplied(eval_id="e1", allocs=PLANS["alike"]))
    lean = decode_event(stored, replica=True)
    assert isinstance(lean, PlanApplied)
    state = InMemoryState(drop_metrics=True, owns_events=True)
    apply(state, 1, lean)
    a0, a1 = lean.allocs[0], lean.allocs[1]  # the reducer built them into the state and the event
    assert state.alloc(a0.id) is a0 and state.alloc(a1.id) is a1
    assert a0.resources is a1.resources and a0.__dict__ is not a1.__dict__
    assert a0.task_states is a1.task_states and a0.__pydantic_fields_set__ is a1.__pydantic_fields_set__
    stop = state.alloc(a0.id).model_copy(update={"desired_status": "stop"})  # type: ignore[union-attr]
    apply(state, 2, PlanApplied(eval_id="e2", stopped=[stop]))
    assert state.alloc(a0.id).desired_status == "stop"  # type: ignore[union-attr]
    assert state.alloc(a1.id).desired_status == "run" and state.alloc(a1.id).modify_index == 1  # type: ignore[union-attr]
    assert state.node_usage(a1.node_id)[0] > 0
