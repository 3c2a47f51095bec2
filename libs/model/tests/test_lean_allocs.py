"""A replica's allocs held lean (drover.model.alloc.lean_members): the names of their members
shared by every alloc, the four members they least often hold left to the class while at their
default. Every reader gets the same answers as from the alloc held whole: its members, its
documents (JSON text included), equality; and an alloc changed after sharing changes no other."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from drover.model import Allocation
from drover.model.alloc import (
    HELD_BY_CLASS,
    AllocDeploymentStatus,
    AllocMetric,
    AllocRestartRequest,
    ReplicaAllocation,
    RescheduleEvent,
    RescheduleTracker,
    TaskState,
    is_lean,
    lean_members,
    replica_json,
)
from drover.model.events import AllocRestartRequested, PlanApplied, decode_event, encode_event_json
from drover.model.job import Resources
from drover.model.placements import encode_placements
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
        "metrics": AllocMetric(nodes_evaluated=i),
        "create_time": 5,
        "modify_time": 5,
    }
    fields.update(kw)
    return Allocation(**fields)


# Allocs as a replica may hold them: at their defaults, and with each held member (and others)
# not at its default. `lean`: whether the replica holds it lean.
CASES: dict[str, tuple[dict[str, object], bool]] = {
    "plain": ({}, True),
    "running, with task states": (
        {"client_status": "running", "task_states": {"web": TaskState(state="running", restarts=2)}},
        True,
    ),
    "a canary": ({"deployment_id": "d1", "deployment_status": AllocDeploymentStatus(canary=True)}, True),
    "a restart request": ({"restart_request": AllocRestartRequest(id="r1", task_name="web")}, False),
    "rescheduled": (
        {
            "previous_allocation": "old",
            "reschedule_tracker": RescheduleTracker(events=[RescheduleEvent(prev_alloc_id="old", delay=3)]),
        },
        False,
    ),
    "preempted": ({"desired_status": "evict", "preempted_by_allocation": "a9999"}, False),
    # A held member given its default explicitly (a decoded document may hold it so).
    "held member at its default": ({"restart_request": None, "preempted_by_allocation": ""}, True),
}


def _replica_alloc(kw: dict[str, object]) -> ReplicaAllocation:
    """The alloc as a replica decodes it, held whole (not yet compacted)."""
    doc = _alloc(1, **kw).model_dump_json(by_alias=True, exclude={"metrics"})
    return ReplicaAllocation.model_validate_json(doc)


def _readings(a: Allocation) -> dict[str, object]:
    """Everything a reader may take from an alloc."""
    return {
        "members": {name: getattr(a, name) for name in Allocation.model_fields},
        "api": a.to_api(),
        "dump": a.model_dump(),
        "json": a.model_dump_json(by_alias=True),
        "stored": a.model_dump_json(by_alias=True, exclude_defaults=True),
        "without nulls": a.model_dump(by_alias=True, exclude_none=True),
        "some members": a.model_dump(include={"id", "restart_request", "preempted_by_allocation"}),
        "not some": a.model_dump(exclude={"restart_request", "reschedule_tracker"}),
        "terminal": a.terminal_status(),
        "canary": a.is_canary(),
    }


@pytest.mark.parametrize(("kw", "lean"), CASES.values(), ids=CASES.keys())
def test_a_replica_holds_allocs_lean_and_readers_see_the_same(kw: dict[str, object], lean: bool) -> None:
    whole = _replica_alloc(kw)
    before = _readings(whole)
    state = InMemoryState(drop_metrics=True, owns_events=True)
    state.upsert_alloc(_replica_alloc(kw))
    held = state.alloc(whole.id)
    assert held is not None
    assert is_lean(held.__dict__) is lean
    assert _readings(held) == before
    assert held == whole and whole == held
    assert held != _replica_alloc({**kw, "client_status": "failed"})


def test_lean_members_are_smaller_and_share_one_table_of_names() -> None:
    a, b = _replica_alloc({}), _replica_alloc({"client_status": "running"})
    whole_size = sys.getsizeof(a.__dict__)
    lean_a, lean_b = lean_members(dict(a.__dict__)), lean_members(dict(b.__dict__))
    assert is_lean(lean_a) and is_lean(lean_b)
    assert not HELD_BY_CLASS.keys() & lean_a.keys()
    assert sys.getsizeof(lean_a) < whole_size / 2  # 296 bytes against 832 (CPython 3.11)
    # A held member not at its default: the members stay whole.
    restart = dict(_replica_alloc(CASES["a restart request"][0]).__dict__)
    assert lean_members(restart) is restart


def _placed(n: int) -> InMemoryState:
    """A replica that applied one plan of `n` allocs, as stored (in columns)."""
    state = InMemoryState(drop_metrics=True, owns_events=True)
    event = PlanApplied(eval_id="e1", job_id="web", allocs=[_alloc(i) for i in range(n)], at=5)
    apply(state, 1, decode_event(encode_event_json(event), replica=True))
    return state


# Changes to one alloc after its plan was applied, each as the log makes it.
CHANGES: dict[str, Callable[[InMemoryState, ReplicaAllocation], None]] = {
    "restart requested": lambda s, a: apply(
        s, 2, AllocRestartRequested(alloc_id=a.id, request=AllocRestartRequest(id="r1", all_tasks=True))
    ),
    "stopped": lambda s, a: apply(
        s, 2, PlanApplied(eval_id="e2", stopped=[a.model_copy(update={"desired_status": "stop"})])
    ),
    "rescheduled and preempted": lambda s, a: s.upsert_alloc(
        a.model_copy(
            update={
                "reschedule_tracker": RescheduleTracker(events=[RescheduleEvent(delay=1)]),
                "preempted_by_allocation": "a9999",
                "resources": Resources(cpu=1),
            }
        )
    ),
    "running": lambda s, a: s.upsert_alloc(
        a.model_copy(update={"client_status": "running", "task_states": {"web": TaskState(state="running")}})
    ),
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_an_alloc_changed_after_sharing_changes_no_other(
    change: Callable[[InMemoryState, ReplicaAllocation], None],
) -> None:
    state = _placed(20)
    allocs = list(state.allocs.values())
    assert all(type(a) is ReplicaAllocation and is_lean(a.__dict__) for a in allocs)
    assert allocs[0].resources is allocs[1].resources  # shared, as the plan's template's
    before = {a.id: _readings(a) for a in allocs}
    changed = allocs[3]
    change(state, changed)  # type: ignore[arg-type]
    after = state.alloc(changed.id)
    assert after is not None and _readings(after) != before[changed.id]
    assert _readings(changed) == before[changed.id]  # the alloc it replaced is as it was
    for a in state.allocs.values():
        if a.id != changed.id:
            assert _readings(a) == before[a.id]
    assert sum(state.node_usage(f"n{i}")[0] for i in range(7)) == sum(
        a.resources.cpu for a in state.allocs.values() if not a.terminal_status()
    )


@pytest.mark.parametrize("held", ["plain", "a restart request", "preempted"])
def test_a_plan_of_lean_allocs_is_stored_as_one_of_whole_allocs(held: str) -> None:
    """A scheduler's plan made of a replica's allocs (stopped, or copied with changes) is
    stored exactly as the same plan made of whole allocs."""
    kw = CASES[held][0]
    state = _placed(20)
    lean = [
        a.model_copy(update={"desired_status": "stop", **(kw if a.name.endswith("[2]") else {})})
        for a in state.allocs.values()
    ]
    whole = [ReplicaAllocation.model_validate_json(a.model_dump_json(by_alias=True)) for a in lean]
    assert any(is_lean(a.__dict__) for a in lean) and not any(is_lean(a.__dict__) for a in whole)
    assert lean == whole
    assert encode_placements(lean) == encode_placements(whole)


@pytest.mark.parametrize(("kw", "lean"), CASES.values(), ids=CASES.keys())
def test_a_replica_allocs_json_written_the_quick_way_is_its_own(kw: dict[str, object], lean: bool) -> None:
    whole = _replica_alloc(kw)
    state = InMemoryState(drop_metrics=True, owns_events=True)
    state.upsert_alloc(_replica_alloc(kw))
    held = state.alloc(whole.id)
    assert held is not None and is_lean(held.__dict__) is lean
    own = whole.__pydantic_serializer__.to_json(whole, by_alias=True)
    assert replica_json(held) == own
    assert replica_json(whole) == own
