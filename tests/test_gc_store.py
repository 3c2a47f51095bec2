"""The garbage collector's events on a real PostgreSQL: collected rows leave the projections
exactly as they leave an in-memory replay (only what is still collectable), a rebuild from the
log reproduces the projections after collection while the log keeps every event, and the
commit names what it deleted for the blocking queries."""

from __future__ import annotations

import psycopg
import pytest

from drover.model import Allocation, Deployment, Evaluation
from drover.model.events import (
    AllocClientUpdate,
    AllocsClientUpdated,
    DeploymentsCollected,
    DeploymentUpserted,
    EvalsCollected,
    EvalsUpserted,
    JobCollected,
    JobDeregistered,
    JobRegistered,
    NodesCollected,
    NodeStatusUpdated,
    PlanApplied,
)
from drover.runtime.store import EventStore, eventstore, touched
from drover.runtime.store.eventstore import libpq_url
from drover.runtime.watches import parse_payload
from drover.scheduler import evaluate_plan
from drover.scheduler.planapply import plan_applied_event

from .test_eventstore import _scheduled, job

NOW = 1_700_000_000_000_000_000


def _ids(store: EventStore, table: str) -> list[str]:
    with store.reader.connect() as conn:
        return [r[0] for r in conn.exec_driver_sql(f"SELECT id FROM {table} ORDER BY id")]


def _placed(store: EventStore, count: int) -> list[str]:
    state, _, res = _scheduled(store, nodes=3, count=count, now=NOW)
    placed = store.append([plan_applied_event(evaluate_plan(state, res.plan), NOW)])
    return sorted(a.id for a in placed[0].event.allocs)  # type: ignore[attr-defined]


def test_collected_rows_leave_the_projections_as_they_leave_a_replay(store: EventStore) -> None:
    allocs = _placed(store, 4)
    live, done, stopped, stopping = allocs
    store.append(
        [
            AllocsClientUpdated(
                updates=[
                    AllocClientUpdate(id=live, client_status="running"),
                    AllocClientUpdate(id=done, client_status="complete"),
                    AllocClientUpdate(id=stopping, client_status="running"),
                ]
            ),
            EvalsUpserted(
                evals=[
                    Evaluation(id="e0", job_id="web", status="complete"),
                    Evaluation(id="e-pending", job_id="web"),
                ]
            ),
            DeploymentUpserted(deployment=Deployment(id="d-done", job_id="web", status="successful")),
            DeploymentUpserted(deployment=Deployment(id="d-live", job_id="web", status="running")),
            NodeStatusUpdated(node_id="n1", status="down"),
            NodeStatusUpdated(node_id="n2", status="down"),
        ]
    )
    as_of = store.last_position()
    state = store.replay()
    # The stopped ones: a plan stops them (one still running on its client).
    stops = [state.allocs[i].model_copy(update={"desired_status": "stop"}) for i in (stopped, stopping)]
    store.append([plan_applied_event_of(stops)])
    store.append([NodeStatusUpdated(node_id="n2", status="ready")])  # back: changed since
    before = store.last_position()
    recorded = store.append(
        [
            EvalsCollected(evals=["e0", "e-pending"], allocs=[*allocs, "unknown"]),
            DeploymentsCollected(deployments=["d-done", "d-live"]),
            NodesCollected(nodes=["n1", "n2"], as_of=as_of),
        ]
    )
    assert recorded[0].position == before + 1
    assert _ids(store, "allocs") == sorted([live, stopping])
    assert _ids(store, "evals") == ["e-pending"]
    deployments = _ids(store, "deployments")  # the job's own (running) too
    assert "d-live" in deployments and "d-done" not in deployments
    assert _ids(store, "nodes") == ["n0", "n2"]
    replayed = store.replay()
    assert sorted(replayed.allocs) == _ids(store, "allocs") and sorted(replayed.evals) == ["e-pending"]
    assert sorted(replayed.deployments) == deployments and sorted(replayed.nodes) == ["n0", "n2"]


def plan_applied_event_of(stopped: list[Allocation]) -> PlanApplied:
    """A plan that stops `stopped`."""
    return PlanApplied(eval_id="e-stop", job_id="web", stopped=stopped, at=NOW)


@pytest.mark.parametrize("batch", [3, 2000], ids=["rebuilt in small batches", "in one batch"])
def test_a_rebuild_after_collection_equals_the_live_projections(store: EventStore, batch: int) -> None:
    """Rows written and collected within one batch of the rebuild too; the log keeps them."""
    allocs = _placed(store, 3)
    store.append([JobDeregistered(namespace="default", job_id="web")])
    state = store.replay()
    stops = [a.model_copy(update={"desired_status": "stop"}) for a in state.allocs.values()]
    store.append(
        [
            plan_applied_event_of(stops),
            EvalsUpserted(evals=[Evaluation(id="e0", job_id="web", status="complete")]),
        ]
    )
    store.append([JobRegistered(job=job(count=1).model_copy(update={"id": "api"}))])
    as_of = store.last_position()
    store.append([EvalsCollected(evals=["e0"], allocs=allocs[:2]), EvalsCollected(allocs=allocs[2:])])
    store.append([JobCollected(job_id="web", as_of=as_of), JobCollected(job_id="api", as_of=as_of - 1)])
    before = store.projection_dump()
    assert [r[1] for r in before["jobs"]] == ["api"] and before["allocs"] == [] and before["evals"] == []
    assert before["job_versions"] and all(r[1] == "api" for r in before["job_versions"])
    assert store.rebuild_projections(batch=batch) == store.last_position()
    assert store.projection_dump() == before
    # The log still holds their whole history.
    types = [r.event.type for r in store.iter_all()]
    assert types.count("PlanApplied") == 2 and "JobDeregistered" in types and types[-1] == "JobCollected"


@pytest.mark.parametrize("alloc_keys_max", [64, 1], ids=["allocs named", "allocs by category"])
def test_a_collection_notifies_what_it_deleted(
    database_url: str, store: EventStore, monkeypatch: pytest.MonkeyPatch, alloc_keys_max: int
) -> None:
    monkeypatch.setattr(touched, "ALLOC_KEYS_MAX", alloc_keys_max)
    allocs = _placed(store, 2)
    state = store.replay()
    stops = [a.model_copy(update={"desired_status": "stop"}) for a in state.allocs.values()]
    store.append(
        [
            plan_applied_event_of(stops),
            EvalsUpserted(evals=[Evaluation(id="e0", job_id="web", status="complete")]),
        ]
    )
    nodes = {state.allocs[a].node_id for a in allocs}
    listener = psycopg.connect(libpq_url(database_url), autocommit=True)
    listener.execute(f"LISTEN {eventstore.NOTIFY_CHANNEL}")
    try:
        (rec,) = store.append([EvalsCollected(evals=["e0"], allocs=allocs)])
        keys: set[str] = set()
        every: set[str] = set()
        for note in listener.notifies(timeout=0.5, stop_after=None):
            position, named, categories = parse_payload(note.payload)
            assert position == rec.position
            keys.update(named)
            every.update(categories)
    finally:
        listener.close()
    named_allocs = {f"alloc:{a}" for a in allocs} if alloc_keys_max >= 2 else set()
    assert (
        keys
        == {"allocs", "allocs@default", "evals", "evals@default", "job:default/web", "eval:e0"}
        | {f"node:{n}" for n in nodes}
        | named_allocs
    )
    assert every == (set() if named_allocs else {"alloc"})
