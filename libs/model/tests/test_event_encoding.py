"""How events are stored and decoded: compact JSON that round-trips exactly, Nomad's nulls taken
as defaults at any depth, and the leaner form replicas keep."""

from __future__ import annotations

import json

import pytest

from drover.model import Allocation, Job
from drover.model.alloc import AllocMetric, NodeScoreMeta, ReplicaAllocation
from drover.model.evaluation import Evaluation
from drover.model.events import (
    EvalsUpserted,
    JobDeregistered,
    PlanApplied,
    ReplicaPlanApplied,
    decode_event,
    encode_event,
    encode_event_json,
)
from drover.model.job import Resources
from drover.model.reducer import apply
from drover.model.state import InMemoryState


def _alloc(i: int, **kw: object) -> Allocation:
    return Allocation(
        id=f"a{i}",
        eval_id="e1",
        name=f"web.web[{i}]",
        node_id="n1",
        job_id="web",
        task_group="web",
        resources=Resources(cpu=250, memory_mb=64),
        metrics=AllocMetric(nodes_evaluated=3, score_meta_data=[NodeScoreMeta(node_id="n1", norm_score=0.5)]),
        **kw,  # type: ignore[arg-type]
    )


EVENTS = [
    PlanApplied(eval_id="e1", job_id="web", allocs=[_alloc(0), _alloc(1)], at=5),
    PlanApplied(eval_id="e2"),
    JobDeregistered(namespace="default", job_id="web"),
    EvalsUpserted(evals=[Evaluation(id="e1", job_id="web", status="complete")]),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.type)
def test_compact_json_round_trips(event: PlanApplied) -> None:
    stored = encode_event_json(event)
    assert json.loads(stored)["Type"] == event.type
    assert decode_event(stored) == event
    # and the compact form decodes to what the full form does
    assert decode_event(stored) == decode_event(json.dumps(encode_event(event)))


def test_compact_json_leaves_defaults_out() -> None:
    stored = json.loads(encode_event_json(EVENTS[0]))
    alloc = stored["Allocs"][0]
    assert "DesiredStatus" not in alloc  # "run" is the default
    assert alloc["Resources"] == {"CPU": 250, "MemoryMB": 64}
    assert len(encode_event_json(EVENTS[0])) < len(json.dumps(encode_event(EVENTS[0]))) / 2


def test_nulls_take_defaults_at_any_depth() -> None:
    body = {
        "ID": "api",
        "Priority": None,
        "TaskGroups": [
            {"Name": "g", "Count": None, "Tasks": [{"Name": "t", "Driver": "mock", "Config": None}]}
        ],
    }
    for job in (Job.model_validate(body), Job.model_validate_json(json.dumps(body))):
        assert job.priority == Job().priority
        assert job.task_groups[0].count == 1
        assert job.task_groups[0].tasks[0].config == {}


def test_replica_decoding_drops_metrics_only() -> None:
    stored = encode_event_json(EVENTS[0])
    full = decode_event(stored)
    lean = decode_event(stored, replica=True)
    assert isinstance(lean, ReplicaPlanApplied) and isinstance(full, PlanApplied)
    assert all(isinstance(a, ReplicaAllocation) and a.metrics is None for a in lean.allocs)
    assert all(a.metrics is not None for a in full.allocs)
    strip = {"metrics"}
    assert [a.model_dump(exclude=strip) for a in lean.allocs] == [
        a.model_dump(exclude=strip) for a in full.allocs
    ]


def test_both_decodings_reduce_to_the_same_state_but_metrics() -> None:
    full_state, lean_state = InMemoryState(), InMemoryState(drop_metrics=True)
    for pos, event in enumerate(EVENTS, start=1):
        stored = encode_event_json(event)
        apply(full_state, pos, decode_event(stored))
        apply(lean_state, pos, decode_event(stored, replica=True))
    assert full_state.alloc("a0") is not None and full_state.alloc("a0").metrics is not None  # type: ignore[union-attr]
    lean = lean_state.alloc("a0")
    assert lean is not None and lean.metrics is None
    assert lean.model_dump(exclude={"metrics"}) == full_state.alloc("a0").model_dump(exclude={"metrics"})  # type: ignore[union-attr]


def test_a_plan_touching_an_existing_alloc_keeps_its_recorded_metrics() -> None:
    state = InMemoryState()
    apply(state, 1, EVENTS[0])
    # A stop comes from a worker's replica: no metrics on it.
    stop = _alloc(0).model_copy(update={"metrics": None, "desired_status": "stop"})
    apply(state, 2, PlanApplied(eval_id="e3", stopped=[stop]))
    after = state.alloc("a0")
    assert after is not None and after.desired_status == "stop"
    assert after.metrics == _alloc(0).metrics


def test_replica_state_shares_equal_parts_of_allocs_and_keeps_their_values() -> None:
    lean = InMemoryState(drop_metrics=True)
    plain = InMemoryState()
    for st in (lean, plain):
        apply(st, 1, EVENTS[0])
    a0, a1 = lean.alloc("a0"), lean.alloc("a1")
    assert a0 is not None and a1 is not None
    assert a0.resources is a1.resources and a0.desired_transition is a1.desired_transition
    assert a0.alloc_states is a1.alloc_states
    p0 = plain.alloc("a0")
    assert p0 is not None and p0.resources is not plain.alloc("a1").resources  # type: ignore[union-attr]
    assert a0.model_dump(exclude={"metrics"}) == p0.model_dump(exclude={"metrics"})
    # a change is a copy: the other alloc, and the shared parts, are untouched
    stop = a0.model_copy(update={"desired_status": "stop", "alloc_states": [*a0.alloc_states]})
    apply(lean, 2, PlanApplied(eval_id="e9", stopped=[stop]))
    assert lean.alloc("a0").desired_status == "stop"  # type: ignore[union-attr]
    assert a1.desired_status == "run" and a1.alloc_states == [] and a1.resources.cpu == 250


def test_a_stale_unknown_does_not_overwrite_what_a_reconnected_client_said() -> None:
    from drover.model import Node
    from drover.model.events import AllocClientUpdate, AllocsClientUpdated, NodeRegistered, NodeStatusUpdated

    state = InMemoryState()
    apply(state, 1, NodeRegistered(node=Node(id="n1")))
    apply(state, 2, EVENTS[0])
    apply(state, 3, NodeStatusUpdated(node_id="n1", status="disconnected"))
    marked = state.alloc("a0").model_copy(update={"client_status": "unknown"})  # type: ignore[union-attr]
    apply(state, 4, PlanApplied(eval_id="e5", allocs=[marked]))
    assert state.alloc("a0").client_status == "unknown"  # type: ignore[union-attr]
    apply(state, 5, NodeStatusUpdated(node_id="n1", status="ready"))
    apply(
        state,
        6,
        AllocsClientUpdated(node_id="n1", updates=[AllocClientUpdate(id="a0", client_status="running")]),
    )
    # a reconnect plan computed before the client's report still carries "unknown"
    apply(state, 7, PlanApplied(eval_id="e6", allocs=[marked]))
    assert state.alloc("a0").client_status == "running"  # type: ignore[union-attr]


def test_a_state_owning_its_events_keeps_their_allocs_and_reduces_the_same() -> None:
    stop = _alloc(0).model_copy(update={"metrics": None, "desired_status": "stop"})
    later = [*EVENTS[:2], PlanApplied(eval_id="e3", stopped=[stop], at=9)]
    copying, owning = InMemoryState(drop_metrics=True), InMemoryState(drop_metrics=True, owns_events=True)
    for pos, event in enumerate(later, start=1):
        stored = encode_event_json(event)
        apply(copying, pos, decode_event(stored, replica=True))
        decoded = decode_event(stored, replica=True)
        apply(owning, pos, decoded)
        if isinstance(decoded, PlanApplied) and decoded.allocs:
            assert owning.alloc("a0") is decoded.allocs[0]  # kept, not copied
    for alloc_id in ("a0", "a1"):
        a, b = copying.alloc(alloc_id), owning.alloc(alloc_id)
        assert a is not None and b is not None
        assert a.model_dump() == b.model_dump()
    assert owning.alloc("a0").desired_status == "stop" and owning.alloc("a0").create_index == 1  # type: ignore[union-attr]
    assert owning.node_usage("n1") == copying.node_usage("n1") == (250, 64, 0)


def _placed(n: int, start: int, job: str, *, alike: bool = False, **kw: object) -> list[Allocation]:
    """`n` new allocs; `alike`: of one size (a plan of one group, the usual case), so the
    columns hold only IDs, names and nodes; else of two, so resources are a column too."""
    return [
        Allocation(
            id=f"{job}-{i}",
            eval_id=f"e-{job}",
            name=f"{job}.web[{i}]",
            node_id=f"n{i % 3}",
            job_id=job,
            task_group="web",
            resources=Resources(cpu=100 + (0 if alike else i % 2), memory_mb=64),
            metrics=AllocMetric(nodes_evaluated=3),
            **kw,  # type: ignore[arg-type]
        )
        for i in range(start, start + n)
    ]


def _fast_path_events() -> list[PlanApplied]:
    from drover.model.deployment import Deployment, DeploymentState

    dep = Deployment(
        id="d1", job_id="api", task_groups={"web": DeploymentState(desired_total=20, progress_deadline=7)}
    )
    first = _placed(20, 0, "web")  # columns (>= 16 allocs), new
    moved = first[3].model_copy(update={"metrics": None, "node_id": "n2", "client_status": "running"})
    return [
        PlanApplied(eval_id="e1", job_id="web", allocs=first, at=5),
        # known and new allocs in one plan: the known one takes the general path
        PlanApplied(eval_id="e2", job_id="web", allocs=[moved, *_placed(2, 20, "web")], at=6),
        # new allocs of a deployment are counted in it
        PlanApplied(
            eval_id="e3", job_id="api", deployment=dep, allocs=_placed(18, 0, "api", deployment_id="d1"), at=7
        ),
        # a replacement links its previous alloc (the general path)
        PlanApplied(
            eval_id="e4",
            job_id="web",
            stopped=[first[0].model_copy(update={"metrics": None, "desired_status": "stop"})],
            allocs=_placed(1, 30, "web", previous_allocation="web-0"),
            at=8,
        ),
        # a plan of terminal new allocs adds no usage
        PlanApplied(
            eval_id="e5",
            job_id="done",
            allocs=_placed(17, 0, "done", alike=True, client_status="complete"),
            at=9,
        ),
        # allocs of one size in columns, new ones of a deployment and known ones moved
        PlanApplied(
            eval_id="e6",
            job_id="one",
            deployment=dep.model_copy(update={"id": "d2", "job_id": "one"}),
            allocs=_placed(20, 0, "one", alike=True, deployment_id="d2"),
            at=10,
        ),
        PlanApplied(
            eval_id="e7",
            job_id="one",
            allocs=[
                a.model_copy(update={"node_id": "n0", "metrics": None})
                for a in _placed(20, 10, "one", alike=True, deployment_id="d2")
            ],
            at=11,
        ),
    ]


def test_a_replicas_fast_path_for_new_placements_reduces_the_same_state() -> None:
    """`InMemoryState.place_new` (a replica owning its events) against the general path (a
    state that copies), over new, known, deployment, replacement and terminal placements."""
    copying, owning = InMemoryState(drop_metrics=True), InMemoryState(drop_metrics=True, owns_events=True)
    for pos, event in enumerate(_fast_path_events(), start=1):
        stored = encode_event_json(event)
        apply(copying, pos, decode_event(stored, replica=True))
        apply(owning, pos, decode_event(stored, replica=True))
    assert len(owning.allocs) == len(copying.allocs) == 20 + 2 + 18 + 1 + 17 + 30
    for alloc_id, a in copying.allocs.items():
        b = owning.alloc(alloc_id)
        assert b is not None and b.model_dump() == a.model_dump()
        assert b.metrics is None
    assert owning.alloc("web-0").next_allocation == "web-30"  # type: ignore[union-attr]
    assert owning.alloc("web-3").node_id == "n2"  # type: ignore[union-attr]
    assert owning.alloc("web-1").create_index == 1 and owning.alloc("web-20").create_index == 2  # type: ignore[union-attr]
    for node in ("n0", "n1", "n2"):
        assert owning.node_usage(node) == copying.node_usage(node)
        assert {a.id for a in owning.allocs_by_node(node)} == {a.id for a in copying.allocs_by_node(node)}
    for job in ("web", "api", "done", "one"):
        assert sorted(a.id for a in owning.allocs_by_job("default", job)) == sorted(
            a.id for a in copying.allocs_by_job("default", job)
        )
    assert sum(owning.node_usage(n)[0] for n in ("n0", "n1", "n2")) == sum(
        a.resources.cpu for a in copying.allocs.values() if not a.terminal_status()
    )
    dep_a, dep_b = copying.deployment("d1"), owning.deployment("d1")
    assert dep_a is not None and dep_b is not None and dep_a.model_dump() == dep_b.model_dump()
    assert dep_b.task_groups["web"].placed_allocs == 18 and dep_b.task_groups["web"].require_progress_by == 14
    dep_a, dep_b = copying.deployment("d2"), owning.deployment("d2")
    assert dep_a is not None and dep_b is not None and dep_a.model_dump() == dep_b.model_dump()
    assert dep_b.task_groups["web"].placed_allocs == 30
    assert owning.alloc("one-12").node_id == "n0" and owning.alloc("one-12").create_index == 6  # type: ignore[union-attr]
