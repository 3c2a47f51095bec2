"""The event log on a real PostgreSQL: positions, optimistic concurrency, gap-free reads under
concurrent writers, fencing, and projections equal to a replay of the log."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
import sqlalchemy
from alembic import command
from sqlalchemy import text

from drover.model import (
    DriverInfo,
    Evaluation,
    Job,
    Node,
    NodeCpuResources,
    NodeDiskResources,
    NodeMemoryResources,
    NodeResources,
    Resources,
    Task,
    TaskGroup,
    TaskState,
)
from drover.model.acl import ACLToken
from drover.model.alloc import AllocMetric, AllocRestartRequest
from drover.model.brokerstate import AllocRecord, BrokerState, apply_for_broker, decode_for_broker
from drover.model.canonicalize import canonicalize
from drover.model.events import (
    ACLBootstrapped,
    ACLPolicyDeleted,
    ACLPolicyUpserted,
    ACLTokenDeleted,
    ACLTokenUpserted,
    AllocClientUpdate,
    AllocsClientUpdated,
    EvalsUpserted,
    JobRegistered,
    JobRestartDeleted,
    JobRestartSignaled,
    JobRestartStarted,
    JobRestartUpdated,
    JobStabilityUpdated,
    NodeDeregistered,
    NodeRegistered,
    NodeStatusUpdated,
    PlanApplied,
    ScalingEventRegistered,
    ServicesDeregistered,
    ServicesRegistered,
    decode_event,
    encode_event_json,
    plans,
)
from drover.model.jobrestart import JobRestart, request_id
from drover.model.scaling import ScalingEvent
from drover.model.serviceregistration import ServiceRegistration
from drover.model.state import InMemoryState
from drover.model.variables import EncryptedItems
from drover.planner import applier
from drover.runtime.embedded import EmbeddedPostgres
from drover.runtime.replica import load_broker_snapshot
from drover.runtime.store import (
    ConcurrencyError,
    EventStore,
    FencedError,
    NewEvent,
    eventstore,
    migrate,
    statements,
    touched,
)
from drover.runtime.store.eventstore import libpq_url
from drover.runtime.store.migrate import alembic_config
from drover.runtime.watches import parse_payload
from drover.scheduler import SchedulerResult, evaluate_plan, schedule
from drover.scheduler.planapply import plan_applied_event
from drover.scheduler.wire import PlanRequest, decode_request, encode_request


def node(i: int) -> Node:
    return Node(
        id=f"n{i}",
        name=f"n{i}",
        datacenter="dc1",
        drivers={"mock": DriverInfo()},
        node_resources=NodeResources(
            cpu=NodeCpuResources(cpu_shares=4000),
            memory=NodeMemoryResources(memory_mb=8192),
            disk=NodeDiskResources(disk_mb=50_000),
        ),
    )


def job(count: int = 3, version: int = 0) -> Job:
    return canonicalize(
        Job(
            id="web",
            version=version,
            task_groups=[
                TaskGroup(
                    name="g",
                    count=count,
                    tasks=[Task(name="t", driver="mock", resources=Resources(cpu=500, memory_mb=256))],
                )
            ],
        )
    )


@pytest.fixture(params=["unstaged", "staged"])
def staging(
    request: pytest.FixtureRequest, store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Appends as they come (a small append numbers its events as it inserts them), or every
    one staged: its events inserted before the lock and numbered under it. Either way no
    committed event is left unnumbered."""
    if request.param == "staged":
        monkeypatch.setattr(eventstore, "STAGE_FROM", 0)
    yield
    with store.reader.connect() as conn:
        left = conn.exec_driver_sql("SELECT count(*) FROM events WHERE position <= 0 OR version IS NULL")
        assert left.scalar_one() == 0


@pytest.mark.usefixtures("staging")
def test_positions_are_contiguous_and_projections_written(store: EventStore) -> None:
    rec = store.append([NodeRegistered(node=node(i)) for i in range(3)])
    assert [r.position for r in rec] == [1, 2, 3]
    rec2 = store.append([JobRegistered(job=job())])
    assert rec2[0].position == 4 and rec2[0].version == 1
    assert [r.position for r in store.read(0)] == [1, 2, 3, 4]
    state = store.replay()
    assert set(state.nodes) == {"n0", "n1", "n2"}
    j = state.job("default", "web")
    assert j is not None and j.create_index == 4 and j.modify_index == 4
    dump = store.projection_dump()
    assert len(dump["nodes"]) == 3 and len(dump["jobs"]) == 1 and len(dump["job_versions"]) == 1


@pytest.mark.usefixtures("staging")
def test_optimistic_concurrency_refuses_and_writes_nothing(store: EventStore) -> None:
    store.append([NewEvent(JobRegistered(job=job()), expected_version=0)])
    with pytest.raises(ConcurrencyError):
        store.append([NewEvent(JobRegistered(job=job(version=1)), expected_version=0)])
    assert store.last_position() == 1
    store.append([NewEvent(JobRegistered(job=job(version=1)), expected_version=1)])
    assert store.last_position() == 2


def test_reads_run_outside_a_transaction_and_appends_on_the_same_connection_inside_one(
    database_url: str,
) -> None:
    """Reads take no BEGIN/ROLLBACK round trips; the one pooled connection they use goes back to
    transactional for an append, so a refused append still writes nothing."""
    s = EventStore(database_url, pool_size=1)
    try:
        s.append([NewEvent(JobRegistered(job=job()), expected_version=0)])
        with s.reader.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
            # No transaction block is open after a statement (psycopg's IDLE, not INTRANS).
            assert conn.connection.dbapi_connection.info.transaction_status.name == "IDLE"
        assert s.last_position() == 1 and [r[0] for r in s.read_raw(0)] == [1]
        with s.engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
            assert conn.connection.dbapi_connection.info.transaction_status.name == "INTRANS"
        with pytest.raises(ConcurrencyError):
            s.append(
                [
                    NodeRegistered(node=node(1)),
                    NewEvent(JobRegistered(job=job(version=1)), expected_version=0),
                ]
            )
        assert s.last_position() == 1 and s.replay().nodes == {}
    finally:
        s.close()


@pytest.mark.usefixtures("staging")
@pytest.mark.parametrize("per_insert", [eventstore.EVENTS_PER_INSERT, 1, 2])
def test_one_append_numbers_each_stream_s_events_in_turn(
    store: EventStore, per_insert: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # However many statements the append's events are written in.
    monkeypatch.setattr(eventstore, "EVENTS_PER_INSERT", per_insert)
    store.append([NodeRegistered(node=node(1))])
    rec = store.append(
        [
            NodeStatusUpdated(node_id="n1", status="down", at=1),
            NewEvent(JobRegistered(job=job()), expected_version=0),
            NewEvent(NodeStatusUpdated(node_id="n1", status="ready", at=2), expected_version=2),
            NewEvent(JobRegistered(job=job(version=1)), expected_version=1),
        ]
    )
    assert [(r.position, r.stream, r.version) for r in rec] == [
        (2, "node:n1", 2),
        (3, "job:default/web", 1),
        (4, "node:n1", 3),
        (5, "job:default/web", 2),
    ]
    assert [(r.position, r.version) for r in store.read(1)] == [(2, 2), (3, 1), (4, 3), (5, 2)]
    # An expectation that a stream's earlier event in the same append already moved past.
    with pytest.raises(ConcurrencyError):
        store.append(
            [
                NodeStatusUpdated(node_id="n1", status="down", at=3),
                NewEvent(NodeStatusUpdated(node_id="n1", status="ready", at=4), expected_version=3),
            ]
        )
    assert store.last_position() == 5
    node_doc = store.replay().node("n1")
    assert node_doc is not None and node_doc.status == "ready" and node_doc.modify_index == 4


def test_gap_free_under_concurrent_writers(store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    writers, per_writer = 6, 40
    seen: list[int] = []
    done = threading.Event()
    # Half the writers append ten events at a time, staged (inserted before the lock, numbered
    # under it); the other half one at a time, numbered as they are inserted.
    monkeypatch.setattr(eventstore, "STAGE_FROM", 500)

    def tail() -> None:
        last = 0
        while True:
            finished = done.is_set()
            for r in store.read(last, 500):
                seen.append(r.position)
                last = r.position
            if finished and last == writers * per_writer:
                return

    def write(w: int) -> None:
        if w % 2:
            for k in range(0, per_writer, 10):
                store.append(
                    [NodeStatusUpdated(node_id=f"w{w}", status="ready", at=k + i) for i in range(10)]
                )
        else:
            for k in range(per_writer):
                store.append([NodeStatusUpdated(node_id=f"w{w}", status="ready", at=k)])

    reader = threading.Thread(target=tail)
    reader.start()
    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    reader.join(timeout=60)
    # A tailing reader saw every position exactly once, in order: no late commit was skipped.
    assert seen == list(range(1, writers * per_writer + 1))
    # Each writer's stream numbered 1..per_writer in its own order, staged or not.
    for w in range(writers):
        mine = [r for r in store.read(0, 10_000) if r.stream == f"node:w{w}"]
        assert [r.version for r in mine] == list(range(1, per_writer + 1))
        assert [r.event.at for r in mine if isinstance(r.event, NodeStatusUpdated)] == list(range(per_writer))


@pytest.mark.usefixtures("staging")
def test_a_deposed_leader_is_fenced(store: EventStore) -> None:
    first = store.acquire_lease("plan-applier", "a")
    second = store.acquire_lease("plan-applier", "b")
    assert second == first + 1
    with pytest.raises(FencedError):
        store.append([NodeRegistered(node=node(1))], fence=("plan-applier", first))
    assert store.last_position() == 0
    store.append([NodeRegistered(node=node(1))], fence=("plan-applier", second))
    assert store.last_position() == 1


def test_migrations_are_idempotent(database_url: str) -> None:
    migrate(database_url)
    migrate(database_url)


def test_migration_0003_keeps_every_alloc_document(database_url: str, store: EventStore) -> None:
    store.append([NodeRegistered(node=node(i)) for i in range(2)] + [JobRegistered(job=job(count=3))])
    state = store.replay()
    evaluation = Evaluation(id="e0", job_id="web", type="service", triggered_by="job-register")
    res = schedule(state, evaluation, 1_700_000_000_000_000_000)
    store.append([plan_applied_event(evaluate_plan(state, res.plan), 1_700_000_000_000_000_000)])
    before = store.projection_dump()
    assert len(before["allocs"]) == 3

    def alloc_indexes() -> set[str]:
        with store.engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT indexname FROM pg_indexes WHERE tablename = 'allocs'")
            return {r[0] for r in rows}

    command.downgrade(alembic_config(database_url), "0002")
    assert "allocs_eval" in alloc_indexes()
    migrate(database_url)
    # 0003 dropped allocs_eval; ui_0001 added the console's three.
    assert alloc_indexes() == {
        "allocs_pkey",
        "allocs_job",
        "allocs_node",
        "allocs_live",
        "allocs_modify_index",
        "allocs_run_status",
    }
    assert store.projection_dump() == before


@pytest.mark.parametrize("columns_from", [1, 10_000], ids=["placements in columns", "as a list"])
def test_rebuild_reproduces_the_live_projections(
    store: EventStore, monkeypatch: pytest.MonkeyPatch, columns_from: int
) -> None:
    monkeypatch.setattr(plans, "COLUMNS_FROM", columns_from)  # how plans are stored
    store.append([NodeRegistered(node=node(i)) for i in range(4)])
    store.append([JobRegistered(job=job(count=5))])
    for version, count in ((0, 5), (1, 2)):
        if version:
            store.append([JobRegistered(job=job(count=count, version=version))])
        state = store.replay()
        evaluation = Evaluation(id=f"e{version}", job_id="web", type="service", triggered_by="job-register")
        store.append([EvalsUpserted(evals=[evaluation])])
        state = store.replay()
        res = schedule(state, evaluation, 1_700_000_000_000_000_000)
        committed = evaluate_plan(state, res.plan)
        store.append(
            [plan_applied_event(committed, 1_700_000_000_000_000_000), EvalsUpserted(evals=[res.eval])]
        )
    state = store.replay()
    live = [a for a in state.allocs.values() if not a.terminal_status()]
    assert len(live) == 2
    store.append(
        [
            AllocsClientUpdated(
                node_id=live[0].node_id,
                updates=[
                    AllocClientUpdate(
                        id=live[0].id, client_status="running", task_states={"t": TaskState(state="running")}
                    )
                ],
            ),
            NodeStatusUpdated(node_id="n3", status="down"),
        ]
    )
    # Service registrations: registered, changed, one removed (the other kept: its alloc runs).
    regs = [
        ServiceRegistration(
            id=f"s{i}", service_name="web", node_id=a.node_id, job_id="web", alloc_id=a.id, port=i
        )
        for i, a in enumerate(live)
    ]
    store.append([ServicesRegistered(services=regs)])
    store.append(
        [
            ServicesRegistered(services=[regs[0].model_copy(update={"tags": ["b"]})]),
            ServicesDeregistered(ids=["s1"]),
        ]
    )
    # Job restarts: one signalled and seen done, one collected.
    req = AllocRestartRequest(id=request_id("r1", live[1].id), time=1)
    store.append(
        [
            JobRestartStarted(restart=JobRestart(id="r1", job_id="web", batch_size=1)),
            JobRestartSignaled(
                restart_id="r1", job_id="web", batch_number=1, requests={live[1].id: req}, at=1
            ),
            JobRestartUpdated(restart_id="r1", job_id="web", batch_done_at=2, at=2),
            JobRestartStarted(restart=JobRestart(id="r0", job_id="web", status="complete")),
        ]
    )
    store.append([JobRestartDeleted(restart_id="r0", job_id="web")])
    # A version marked stable (not the current one), scaling events, a node purged.
    store.append(
        [
            JobStabilityUpdated(namespace="default", job_id="web", version=0, stable=True),
            ScalingEventRegistered(
                namespace="default",
                job_id="web",
                task_group="web",
                event=ScalingEvent(count=2, previous_count=5),
            ),
            ScalingEventRegistered(
                namespace="default", job_id="web", task_group="web", event=ScalingEvent(error=True)
            ),
            NodeDeregistered(node_id="n3"),
        ]
    )
    # ACL policies and tokens: written, written again, deleted; the bootstrap's token.
    sealed = EncryptedItems(key_id="k1", data="c2VhbGVk")
    tokens = [
        ACLToken(accessor_id=f"t{i}", policies=["ro"], secret_hash=f"h{i}", sealed_secret=sealed)
        for i in range(3)
    ]
    store.append(
        [ACLPolicyUpserted(name="ro", rules='node { policy = "read" }'), ACLPolicyUpserted(name="gone")]
    )
    store.append([ACLBootstrapped(token=tokens[0].model_copy(update={"type": "management", "policies": []}))])
    store.append([ACLTokenUpserted(token=t) for t in tokens[1:]])
    store.append([ACLPolicyUpserted(name="ro", description="again"), ACLPolicyDeleted(name="gone"),
                  ACLTokenUpserted(token=tokens[1].model_copy(update={"name": "renamed"})),
                  ACLTokenDeleted(accessor_id="t2")])  # fmt: skip
    before = store.projection_dump()
    assert [(row[0], row[1]["Description"]) for row in before["acl_policies"]] == [("ro", "again")]
    assert [(row[0], row[1], row[2]["Name"]) for row in before["acl_tokens"]] == [
        ("t0", "h0", ""),
        ("t1", "h1", "renamed"),
    ]
    assert {
        row[2]["CreateIndex"] < row[2]["ModifyIndex"] for row in before["acl_tokens"] if row[0] == "t1"
    } == {True}
    assert {row[2]: row[3]["Stable"] for row in before["job_versions"]} == {0: True, 1: False}
    assert len(before["scaling_events"]) == 1 and "n3" not in {row[0] for row in before["nodes"]}
    assert [(row[0], row[3]) for row in before["job_restarts"]] == [("r1", "running")]
    # n3 purged takes its registrations with it.
    kept = before["service_registrations"]
    assert [row[0] for row in kept] == ([] if live[0].node_id == "n3" else ["s0"])
    for *_, doc, _ in kept:
        assert doc["Tags"] == ["b"] and doc["CreateIndex"] < doc["ModifyIndex"]
    last = store.rebuild_projections(batch=3)  # small batches: state must carry across them
    assert last == store.last_position()
    assert store.projection_dump() == before
    # The in-memory replay (what every service replica does) agrees with the projections.
    replayed = store.replay()
    assert set(replayed.services) == {row[0] for row in kept}
    assert {a.id: a.modify_index for a in replayed.allocs.values()} == {
        row[0]: row[6] for row in before["allocs"]
    }
    assert replayed.allocs[live[0].id].client_status == "running"
    assert set(replayed.acl_tokens) == {"t0", "t1"} and set(replayed.acl_policies) == {"ro"}
    assert replayed.job_version("default", "web", 0).stable  # type: ignore[union-attr]
    assert [e.error for e in replayed.scaling_events("default", "web").scaling_events["web"]] == [True, False]  # type: ignore[union-attr]
    assert replayed.allocs[live[1].id].restart_request == req
    assert list(replayed.job_restarts) == ["r1"] and replayed.job_restarts["r1"].restarted_allocs == [
        live[1].id
    ]
    # The status columns (job status and a node's jobs are read from them) follow the documents.
    rows = before["allocs"]
    docs = [json.loads(row[5]) for row in rows]  # kept as the text the services wrote
    assert all(
        (d["DesiredStatus"], d["ClientStatus"]) == (row[7], row[8]) for d, row in zip(docs, rows, strict=True)
    )
    assert {row[0]: (row[7], row[8]) for row in rows} == {
        a.id: (a.desired_status, a.client_status) for a in replayed.allocs.values()
    }
    assert {row[7] for row in rows} == {"run", "stop"} and "running" in {row[8] for row in rows}
    stored = store.read_raw(0, 1000)
    assert any(
        t == "PlanApplied" and ('"Placements"' in data) is (columns_from == 1) for _, t, data, _ in stored
    )
    # The broker's replica (drover.runtime.replica) loaded from the projections is the one
    # it reads from the log, and it keeps of each alloc what the replay holds.
    from_log = BrokerState()
    for rec in store.read(0, 1000, replica=decode_for_broker):
        apply_for_broker(from_log, rec.position, rec.event)
    loaded = load_broker_snapshot(store)
    assert loaded.index == from_log.index == last
    assert (
        loaded.records
        == from_log.records
        == {
            a.id: AllocRecord((a.namespace, a.job_id), a.node_id, a.desired_status, a.client_status)
            for a in replayed.allocs.values()
        }
    )
    assert loaded.live_allocs("default", "web") == from_log.live_allocs("default", "web") == 2
    assert (loaded.evals, loaded.jobs, loaded.nodes) == (from_log.evals, from_log.jobs, from_log.nodes)


def _scheduled(
    store: EventStore, *, nodes: int, count: int, now: int
) -> tuple[InMemoryState, Evaluation, SchedulerResult]:
    """`nodes` nodes and a job of `count` registered, its eval written, and what the scheduling
    core makes of it on the log replayed: (the replayed state, the eval, the result)."""
    store.append([NodeRegistered(node=node(i)) for i in range(nodes)])
    store.append([JobRegistered(job=job(count=count))])
    evaluation = Evaluation(id="e0", job_id="web", type="service", triggered_by="job-register")
    store.append([EvalsUpserted(evals=[evaluation])])
    state = store.replay()
    return state, evaluation, schedule(state, evaluation, now)


def test_a_placement_taken_for_new_that_exists_is_looked_up_after_all(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large appends take placements with CreateIndex 0 as new without looking them up; one
    that exists after all must still be reduced as an update (what the client owns kept), not
    inserted twice - and the applier's owned events must reduce as a replay does."""
    monkeypatch.setattr(eventstore, "TRUST_NEW_FROM", 1)  # the shortcut even for a small plan
    now = 1_700_000_000_000_000_000
    state, evaluation, res = _scheduled(store, nodes=2, count=2, now=now)
    placed = store.append([plan_applied_event(evaluate_plan(state, res.plan), now)], owned=True)
    first = store.replay().allocs[placed[0].event.allocs[0].id]  # type: ignore[attr-defined]
    store.append(
        [
            AllocsClientUpdated(
                node_id=first.node_id,
                updates=[
                    AllocClientUpdate(
                        id=first.id, client_status="running", task_states={"t": TaskState(state="running")}
                    )
                ],
            )
        ]
    )
    again = first.model_copy(update={"create_index": 0, "client_status": "pending", "task_states": {}})
    res2 = schedule(store.replay(), evaluation.model_copy(update={"id": "e1"}), now)
    plan = evaluate_plan(store.replay(), res2.plan)
    event = plan_applied_event(plan, now).model_copy(update={"eval_id": "e1", "allocs": [again]})
    rec = store.append([event], owned=True)
    dump = store.projection_dump()
    rows = [r for r in dump["allocs"] if r[0] == first.id]
    assert len(rows) == 1 and len(dump["allocs"]) == 2
    after = store.replay().allocs[first.id]
    assert after.create_index == first.create_index and after.modify_index == rec[0].position
    assert after.client_status == "running" and "t" in after.task_states
    doc = json.loads(rows[0][5])
    assert doc["ClientStatus"] == "running" and doc["CreateIndex"] == first.create_index
    store.rebuild_projections()
    assert store.projection_dump() == dump


def test_pooled_connections_survive_a_postgres_restart(tmp_path: Path) -> None:
    """Connections are checked before use only after sitting idle (not on every operation, a
    round trip each); one left over from before a restart is replaced, not handed out."""
    pg = EmbeddedPostgres(tmp_path / "pg")  # durable: what was committed survives the kill
    url = pg.start()
    try:
        migrate(url)
        store = EventStore(url)
        store.append([NodeRegistered(node=node(i)) for i in range(4)])
        with ThreadPoolExecutor(4) as pool:  # several pooled connections, all idle afterwards
            assert list(pool.map(lambda _: store.last_position(), range(8))) == [4] * 8
        pg.kill()
        pg.start()
        time.sleep(eventstore.PING_AFTER_IDLE + 0.2)
        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(lambda _: store.last_position(), range(8))) == [4] * 8
        assert store.append([NodeRegistered(node=node(9))])[0].position == 5
        store.close()
    finally:
        pg.stop()


def test_metrics_passed_on_as_json_are_stored_as_if_decoded(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan applier never decodes a request's placement metrics (they come as JSON, see
    drover.scheduler.wire): the log and the projections must hold them all the same, in the
    columns and in the list form, and a rebuild (which decodes them) must write the same
    documents."""
    monkeypatch.setattr(plans, "COLUMNS_FROM", 5)
    monkeypatch.setattr(applier, "ALLOCS_PER_EVENT", 8)  # parts of 8, 8 (columns) and 4 (a list)
    now = 1_700_000_000_000_000_000
    state, _, res = _scheduled(store, nodes=4, count=20, now=now)
    sent = {a.id: a.metrics for a in res.plan.placements()}
    assert len(sent) == 20 and all(m is not None and m.nodes_evaluated > 0 for m in sent.values())
    req = decode_request(encode_request(PlanRequest(plan=res.plan, evals=[res.eval])))
    assert set(req.metrics_json) == set(sent)
    assert all(a.metrics is None for a in req.plan.placements())
    applied = plan_applied_event(evaluate_plan(state, req.plan), now)
    applied.metrics_json = req.metrics_json
    parts = applier.chunk(applied)
    assert [len(p.allocs) for p in parts] == [8, 8, 4]
    store.append([*parts, EvalsUpserted(evals=req.evals)], owned=True)

    stored = [data for _, t, data, _ in store.read_raw(0, 1000) if t == "PlanApplied"]
    assert ['"Placements"' in s for s in stored] == [True, True, False]
    # The relay's read holds none of them: they are kept beside each event, by alloc ID.
    assert not any("Metrics" in s or "NodesEvaluated" in s for s in stored)
    with store.engine.connect() as conn:
        apart = conn.exec_driver_sql("SELECT metrics FROM events WHERE type = 'PlanApplied'").scalars().all()
    assert [len(json.loads(m)) for m in apart] == [8, 8, 4]
    assert {i: AllocMetric.model_validate(m) for text in apart for i, m in json.loads(text).items()} == sent
    logged = [a for r in store.read(0, 1000) if isinstance(r.event, PlanApplied) for a in r.event.allocs]
    assert {a.id: a.metrics for a in logged} == sent
    dump = store.projection_dump()
    docs = {row[0]: json.loads(row[5]) for row in dump["allocs"]}
    assert {i: AllocMetric.model_validate(d["Metrics"]) for i, d in docs.items()} == sent
    assert store.replay().allocs.keys() == sent.keys()
    store.rebuild_projections()
    assert store.projection_dump() == dump


def test_migration_0004_puts_metrics_back_into_the_events_on_downgrade(
    database_url: str, store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Revision 0004 keeps placement metrics beside each event. Downgraded, the log's events
    are whole again, in both stored forms; upgraded again, those events (metrics inline, as
    every log before 0004 holds them) read back the same, and a rebuild gives the same
    projections."""
    monkeypatch.setattr(plans, "COLUMNS_FROM", 5)
    monkeypatch.setattr(applier, "ALLOCS_PER_EVENT", 12)  # parts of 12 (columns) and 3 (a list)
    now = 1_700_000_000_000_000_000
    state, _, res = _scheduled(store, nodes=4, count=15, now=now)
    applied = plan_applied_event(evaluate_plan(state, res.plan), now)
    store.append([*applier.chunk(applied), EvalsUpserted(evals=[res.eval])])
    whole = [(r.position, encode_event_json(r.event)) for r in store.read(0, 1000)]
    placed = [a for r in store.read(0, 1000) if isinstance(r.event, PlanApplied) for a in r.event.allocs]
    assert len(placed) == 15 and all(a.metrics is not None and a.metrics.nodes_evaluated for a in placed)
    dump = store.projection_dump()

    command.downgrade(alembic_config(database_url), "0003")
    with store.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT position, data::text FROM events ORDER BY position").all()
    assert ["Metrics" in data for _, data in rows if '"PlanApplied"' in data] == [True, True]
    assert [(p, encode_event_json(decode_event(data))) for p, data in rows] == whole

    migrate(database_url)
    assert [(r.position, encode_event_json(r.event)) for r in store.read(0, 1000)] == whole
    store.rebuild_projections()
    assert store.projection_dump() == dump


def test_no_event_is_stored_half_numbered_or_by_an_old_writer(store: EventStore) -> None:
    """Migration 0005: a row is staged (negative position, no version) or numbered (both), so
    a staged append that failed to number its events cannot commit them; and a writer of the
    code before it (the table lock, which does not exclude the advisory lock) names no append
    protocol, so its insert is refused."""
    store.append([NodeRegistered(node=node(1))])
    insert = text(
        "INSERT INTO events (position, stream, version, type, data, protocol) "
        "VALUES (:p, 'node:x', :v, 'NodeRegistered', '{}', 2)"
    )
    for position, version in ((5, None), (-5, 1)):
        with (
            pytest.raises(sqlalchemy.exc.IntegrityError, match="events_numbered"),
            store.engine.begin() as conn,
        ):
            conn.execute(insert, {"p": position, "v": version})
    old_writer = text(
        "INSERT INTO events (position, stream, version, type, data) VALUES (2, 'node:x', 1, 'NodeRegistered', '{}')"
    )
    with pytest.raises(sqlalchemy.exc.IntegrityError, match="protocol"), store.engine.begin() as conn:
        conn.execute(old_writer)
    assert [r.position for r in store.read(0)] == [1]
    with store.reader.connect() as conn:
        assert conn.exec_driver_sql("SELECT protocol FROM events").scalar_one() == statements.APPEND_PROTOCOL


@pytest.mark.parametrize("alloc_keys_max", [64, 2], ids=["allocs named", "allocs by category"])
def test_each_commit_notifies_what_it_changed(
    database_url: str, store: EventStore, monkeypatch: pytest.MonkeyPatch, alloc_keys_max: int
) -> None:
    """The append's notification names the keys of every projection row it wrote
    (drover.runtime.watches), for the blocking queries waiting on them; a commit of more
    allocs than are worth naming names their category instead."""
    monkeypatch.setattr(touched, "ALLOC_KEYS_MAX", alloc_keys_max)
    listener = psycopg.connect(libpq_url(database_url), autocommit=True)
    listener.execute(f"LISTEN {eventstore.NOTIFY_CHANNEL}")

    def heard() -> dict[int, tuple[set[str], set[str]]]:
        out: dict[int, tuple[set[str], set[str]]] = {}
        for note in listener.notifies(timeout=0.5, stop_after=None):
            position, keys, every = parse_payload(note.payload)
            got = out.setdefault(position, (set(), set()))
            got[0].update(keys)
            got[1].update(every)
        return out

    try:
        now = 1_700_000_000_000_000_000
        state, _, res = _scheduled(store, nodes=2, count=3, now=now)
        assert heard() == {
            2: ({"nodes", "node:n0", "node:n1"}, set()),  # one append of two events
            # The lists of every namespace (`jobs`) and of the job's (`jobs@default`).
            3: ({"jobs", "jobs@default", "job:default/web"}, set()),
            4: ({"evals", "evals@default", "eval:e0", "job:default/web"}, set()),
        }
        placed = store.append([plan_applied_event(evaluate_plan(state, res.plan), now)])
        allocs = placed[0].event.allocs  # type: ignore[attr-defined]
        deployment = f"deployment:{allocs[0].deployment_id}"  # the job's first deployment
        assert allocs[0].deployment_id
        named = alloc_keys_max >= len(allocs)
        assert heard() == {
            5: (
                {
                    "allocs",
                    "allocs@default",
                    "job:default/web",
                    "eval:e0",
                    "deployments",
                    "deployments@default",
                    deployment,
                }
                | ({f"alloc:{a.id}" for a in allocs} if named else set())
                | {f"node:{a.node_id}" for a in allocs},
                set() if named else {"alloc"},
            )
        }
        first = allocs[0]
        store.append(
            [
                AllocsClientUpdated(
                    node_id=first.node_id, updates=[AllocClientUpdate(id=first.id, client_status="running")]
                )
            ]
        )
        assert heard() == {
            6: (
                {
                    "allocs",
                    "allocs@default",
                    "job:default/web",
                    "eval:e0",
                    f"alloc:{first.id}",
                    f"node:{first.node_id}",
                    deployment,
                },
                set(),
            )
        }
    finally:
        listener.close()
