"""The broker's replica (drover.model.brokerstate) against a full one: the same log, decoded
as each decodes it, gives the same evals, jobs and nodes, the same node and terminal status
for every alloc, and the same count of live allocs per job, after every event."""

from __future__ import annotations

from drover.model import Allocation, Job, Node
from drover.model.brokerstate import BrokerState, PlanSummary, apply_for_broker, decode_for_broker
from drover.model.deployment import Deployment, DeploymentState
from drover.model.evaluation import Evaluation
from drover.model.events import (
    AllocClientUpdate,
    AllocsClientUpdated,
    AllocsTransitioned,
    DeploymentUpdated,
    DeploymentUpserted,
    EvalsCollected,
    EvalsUpserted,
    Event,
    JobCollected,
    JobDeregistered,
    JobRegistered,
    NodeRegistered,
    NodeStatusUpdated,
    PlanApplied,
    decode_event,
    encode_event_json,
)
from drover.model.job import Resources
from drover.model.placements import COLUMNS_FROM
from drover.model.reducer import apply
from drover.model.state import InMemoryState


def _placed(n: int, start: int, job: str, **kw: object) -> list[Allocation]:
    return [
        Allocation(
            id=f"{job}-{i}",
            eval_id=f"e-{job}",
            name=f"{job}.web[{i}]",
            node_id=f"n{i % 3}",
            job_id=job,
            task_group="web",
            resources=Resources(cpu=100, memory_mb=64),
            **kw,  # type: ignore[arg-type]
        )
        for i in range(start, start + n)
    ]


def _log() -> list[Event]:
    web = _placed(20, 0, "web")
    mixed = _placed(COLUMNS_FROM, 0, "mixed")
    for i, a in enumerate(mixed):
        # a column of client statuses, half of them terminal
        a.client_status = "complete" if i % 2 else "pending"
    dep = Deployment(id="d1", job_id="web", task_groups={"web": DeploymentState(desired_total=20)})

    def again(i: int, **update: object) -> Allocation:
        return web[i].model_copy(update=update)

    return [
        *(NodeRegistered(node=Node(id=f"n{i}")) for i in range(3)),
        JobRegistered(job=Job(id="web")),
        JobRegistered(job=Job(id="batch", type="batch")),
        EvalsUpserted(evals=[Evaluation(id="e-web", job_id="web")]),
        PlanApplied(eval_id="e-web", job_id="web", allocs=web, deployment=dep, at=5),  # columns
        PlanApplied(eval_id="e2", job_id="web", allocs=[again(3, node_id="n2"), *_placed(2, 20, "web")]),
        PlanApplied(eval_id="e-mixed", job_id="mixed", allocs=mixed),
        PlanApplied(
            eval_id="e-done", job_id="batch", allocs=_placed(17, 0, "batch", client_status="complete")
        ),
        AllocsClientUpdated(
            node_id="n1",
            updates=[
                AllocClientUpdate(id="web-1", client_status="running"),
                AllocClientUpdate(id="web-2", client_status="complete"),
                AllocClientUpdate(id="web-4", client_status="failed"),
                AllocClientUpdate(id="mixed-1", client_status="running"),  # terminal to live again
                AllocClientUpdate(id="nowhere", client_status="running"),
            ],
        ),
        PlanApplied(
            eval_id="e3",
            job_id="web",
            stopped=[again(0, desired_status="stop")],
            preempted=[again(5, desired_status="evict")],
            allocs=_placed(1, 30, "web", previous_allocation="web-0"),
        ),
        # an alloc the client finished stays finished through a plan that updates it in place
        PlanApplied(eval_id="e4", job_id="web", allocs=[again(2, client_status="pending")]),
        NodeStatusUpdated(node_id="n1", status="disconnected"),
        # unknown is taken on a disconnected node, kept out on a ready one; lost always
        PlanApplied(
            eval_id="e5",
            job_id="web",
            allocs=[again(7, client_status="unknown"), again(6, client_status="unknown")],
        ),
        PlanApplied(eval_id="e6", job_id="web", allocs=[again(8, client_status="lost")]),
        AllocsTransitioned(
            transitions={}, evals=[Evaluation(id="e-drain", job_id="web", triggered_by="node-drain")]
        ),
        DeploymentUpserted(deployment=dep),
        DeploymentUpdated(deployment_id="d1", status="failed", evals=[Evaluation(id="e-dep", job_id="web")]),
        JobDeregistered(namespace="default", job_id="web"),
        PlanApplied(
            eval_id="e7", job_id="web", stopped=[again(i, desired_status="stop") for i in range(9, 20)]
        ),
        # Collected: terminal ones go (web-9, web-4, a finished batch alloc), live ones stay
        # (web-1 runs, mixed-0 pending), unknown IDs are nothing; evals only terminal.
        EvalsCollected(
            evals=["e-web", "e-dep"], allocs=["web-9", "web-4", "batch-3", "web-1", "mixed-0", "no"]
        ),
        JobCollected(job_id="batch", as_of=1000),
    ]


def test_the_broker_s_replica_agrees_with_a_full_one_after_every_event() -> None:
    full, broker = InMemoryState(drop_metrics=True, owns_events=True), BrokerState()
    for pos, event in enumerate(_log(), start=1):
        stored = encode_event_json(event)
        apply(full, pos, decode_event(stored, replica=True))
        decoded = decode_for_broker(stored)
        assert isinstance(decoded, PlanSummary) == isinstance(event, PlanApplied)
        apply_for_broker(broker, pos, decoded)
        assert broker.index == full.index == pos
        assert broker.evals == full.evals and broker.jobs == full.jobs and broker.nodes == full.nodes
        assert broker.records.keys() == full.allocs.keys()
        for alloc_id, a in full.allocs.items():
            rec = broker.record(alloc_id)
            assert rec is not None
            assert (rec.job, rec.node_id, rec.desired_status, rec.client_status) == (
                (a.namespace, a.job_id), a.node_id, a.desired_status, a.client_status
            ), (pos, alloc_id)  # fmt: skip
            assert rec.terminal_status() == a.terminal_status()
        for namespace, job_id in {(a.namespace, a.job_id) for a in full.allocs.values()}:
            live = [a for a in full.allocs_by_job(namespace, job_id) if not a.terminal_status()]
            assert broker.live_allocs(namespace, job_id) == len(live), (pos, job_id)
    # what the log above went through, so that the comparison covered it
    assert full.alloc("web-7").client_status == "unknown"  # type: ignore[union-attr]  # on n1
    assert full.alloc("web-6").client_status == "pending"  # type: ignore[union-attr]  # on n0
    assert full.alloc("web-2").client_status == "complete"  # type: ignore[union-attr]
    assert broker.live_allocs("default", "mixed") == COLUMNS_FROM // 2 + 1
    assert broker.live_allocs("default", "batch") == 0
    assert broker.live_allocs("default", "web") == 7  # web-1, -3, -6, -7, -20, -21, -30
    assert broker.deployments == {} and broker.allocs == {}
    assert "web-9" not in broker.records and "web-1" in broker.records and "mixed-0" in broker.records
    assert ("default", "batch") not in broker.jobs
