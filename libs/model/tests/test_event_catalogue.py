"""The event catalogue: each event type declared once, with everything it means.

Every type has an example here (a new type without one fails the first test). Each example is
held to its declarations: the rows its reducer reads on an empty state (what it can name before
reading any) are rows it declares (`Event.reads`, what an append prefetches); the evals it
writes are its `evals_made` (the broker's work). A type declared in a test reaches the
decoder, the reducer, the prefetch and Nomad's event stream with no other edit."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest

from drover.model import Allocation, Deployment, Evaluation, Job, Node
from drover.model.acl import ACLToken
from drover.model.alloc import AllocRestartRequest, DesiredTransition
from drover.model.changes import Changes, TrackedState
from drover.model.deployment import DeploymentState
from drover.model.events import (
    EVENT_TYPES,
    ACLBootstrapped,
    ACLPolicyDeleted,
    ACLPolicyUpserted,
    ACLTokenDeleted,
    ACLTokenUpserted,
    AllocClientUpdate,
    AllocRestartRequested,
    AllocsClientUpdated,
    AllocsTransitioned,
    DeploymentsCollected,
    DeploymentUpdated,
    DeploymentUpserted,
    EvalsCollected,
    EvalsUpserted,
    Event,
    JobCollected,
    JobDeregistered,
    JobRegistered,
    JobRestartDeleted,
    JobRestartSignaled,
    JobRestartStarted,
    JobRestartUpdated,
    JobStabilityUpdated,
    NamespaceDeleted,
    NamespaceUpserted,
    NodeDeregistered,
    NodeDrainUpdated,
    NodeEligibilityUpdated,
    NodePoolDeleted,
    NodePoolUpserted,
    NodeRegistered,
    NodesCollected,
    NodeStatusUpdated,
    PlanApplied,
    Reads,
    ScalingEventRegistered,
    SchedulerConfigUpdated,
    ServicesDeregistered,
    ServicesRegistered,
    VariableDeleted,
    VariableLockRenewed,
    VariableUpserted,
    decode_event,
    encode_event_json,
)
from drover.model.events.nodes import NodeUpdate
from drover.model.jobrestart import JobRestart
from drover.model.namespace import Namespace, NamespaceCapabilities
from drover.model.nodepool import NodePool
from drover.model.reducer import apply
from drover.model.scaling import ScalingEvent
from drover.model.schedulerconfig import SchedulerConfiguration
from drover.model.serviceregistration import ServiceRegistration
from drover.model.statewriter import StateWriter
from drover.model.streamevents import has_stream_events, stream_events
from drover.model.variables import EncryptedItems

TOKEN = ACLToken(
    accessor_id="a-1",
    name="ci",
    policies=["readonly"],
    create_time=5,
    secret_hash="aGFzaA==",
    sealed_secret=EncryptedItems(key_id="k1", data="c2VhbGVk"),
)
DEP = Deployment(id="d1", job_id="web", task_groups={"g": DeploymentState(desired_total=1)})
ALLOC = Allocation(id="a1", job_id="web", task_group="g", node_id="n1", deployment_id="d1")
REGISTER_EVAL = Evaluation(id="e1", job_id="web", triggered_by="job-register")

EXAMPLES: list[Event] = [
    NodeRegistered(node=Node(id="n1"), secret_hash="ab" * 32),
    NodeStatusUpdated(node_id="n1", status="down"),
    NodeEligibilityUpdated(node_id="n1", eligibility="ineligible"),
    NodeDrainUpdated(node_id="n1", eligibility="ineligible"),
    NodeDeregistered(node_id="n1"),
    JobRegistered(job=Job(id="web")),
    JobDeregistered(namespace="default", job_id="web"),
    JobStabilityUpdated(namespace="default", job_id="web", version=0, stable=True),
    ScalingEventRegistered(namespace="default", job_id="web", task_group="g", event=ScalingEvent(count=2)),
    VariableUpserted(
        namespace="default", path="app/db", sealed=EncryptedItems(key_id="k1", data="c2VhbGVk"), at=5
    ),
    VariableLockRenewed(namespace="default", path="app/db", lock_id="l1", expires_at=9),
    VariableDeleted(namespace="default", path="app/db"),
    EvalsUpserted(evals=[REGISTER_EVAL]),
    PlanApplied(
        eval_id="e1",
        job_id="web",
        allocs=[ALLOC, ALLOC.model_copy(update={"id": "a2", "previous_allocation": "a0"})],
        stopped=[ALLOC.model_copy(update={"id": "a0", "desired_status": "stop"})],
        deployment=DEP,
        deployment_updates=[{"DeploymentID": "d0", "Status": "successful"}],
    ),
    AllocsClientUpdated(node_id="n1", updates=[AllocClientUpdate(id="a1", client_status="running")]),
    AllocsTransitioned(
        transitions={"a1": DesiredTransition(migrate=True)},
        evals=[Evaluation(id="e2", job_id="web", triggered_by="node-drain")],
    ),
    AllocRestartRequested(alloc_id="a1", request=AllocRestartRequest(id="q1")),
    DeploymentUpserted(deployment=DEP),
    DeploymentUpdated(
        deployment_id="d1",
        status="failed",
        evals=[Evaluation(id="e3", job_id="web", triggered_by="deployment-watcher")],
    ),
    JobRestartStarted(restart=JobRestart(id="r1", job_id="web")),
    JobRestartSignaled(
        restart_id="r1",
        job_id="web",
        batch_number=1,
        requests={"a1": AllocRestartRequest(id="q2")},
        migrate=["a2"],
    ),
    JobRestartUpdated(restart_id="r1", job_id="web", status="paused"),
    JobRestartDeleted(restart_id="r1", job_id="web"),
    EvalsCollected(evals=["e1"], allocs=["a1"]),
    DeploymentsCollected(deployments=["d1"]),
    NodesCollected(nodes=["n1"], as_of=5),
    JobCollected(job_id="web", as_of=5),
    ServicesRegistered(
        node_id="n1",
        services=[
            ServiceRegistration(id="s1", service_name="web", node_id="n1", job_id="web", alloc_id="a1")
        ],
    ),
    ServicesDeregistered(node_id="n1", ids=["s1"]),
    NamespaceUpserted(
        namespace=Namespace(
            name="prod",
            description="d",
            meta={"team": "a"},
            capabilities=NamespaceCapabilities(disabled_task_drivers=["raw_exec"]),
        )
    ),
    NamespaceDeleted(name="prod"),
    ACLPolicyUpserted(name="readonly", description="reads", rules='node { policy = "read" }'),
    ACLPolicyDeleted(name="readonly"),
    ACLTokenUpserted(token=TOKEN),
    ACLTokenDeleted(accessor_id=TOKEN.accessor_id),
    ACLBootstrapped(token=TOKEN.model_copy(update={"type": "management", "policies": [], "global_": True})),
    SchedulerConfigUpdated(config=SchedulerConfiguration(scheduler_algorithm="spread")),
    NodePoolUpserted(pool=NodePool(name="gpu", description="GPU nodes")),
    NodePoolDeleted(name="gpu"),
]


def _declared() -> list[str]:
    """The event types the catalogue declares (not those a test declares)."""
    return sorted(n for n, cls in EVENT_TYPES.items() if cls.__module__.startswith("drover.model.events."))


def test_every_declared_type_has_an_example() -> None:
    assert sorted({e.type for e in EXAMPLES}) == _declared()


def test_the_examples_read_rows() -> None:
    """What keeps the next test from passing on examples that read nothing: all but those that
    only write (a restart started, a node deleted by ID, scaling events) read rows."""
    silent = []
    for event in EXAMPLES:
        state = _ReadsRecorder()
        apply(state, 1, event)
        if not state.asked:
            silent.append(event.type)
    # Variables' and namespaces' events read their one row when asked, as scaling events do.
    assert silent == [
        "NodeDeregistered", "ScalingEventRegistered", "VariableUpserted", "VariableLockRenewed", "VariableDeleted",
        "JobRestartStarted", "ServicesDeregistered", "NamespaceUpserted", "NamespaceDeleted",
        "ACLPolicyUpserted", "ACLPolicyDeleted", "ACLTokenUpserted", "ACLTokenDeleted", "ACLBootstrapped",
        "SchedulerConfigUpdated", "NodePoolDeleted",
    ]  # fmt: skip


class _ReadsRecorder(TrackedState):
    """A state that records every row the reducer asks for, by the prefetch's table names."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: dict[str, set[Any]] = {}

    def _ask(self, table: str, *keys: Any) -> None:
        self.asked.setdefault(table, set()).update(keys)

    def node(self, node_id: str) -> Node | None:
        self._ask("nodes", node_id)
        return super().node(node_id)

    def job(self, namespace: str, job_id: str) -> Job | None:
        self._ask("jobs", (namespace, job_id))
        return super().job(namespace, job_id)

    def alloc(self, alloc_id: str) -> Allocation | None:
        self._ask("allocs", alloc_id)
        return super().alloc(alloc_id)

    def eval(self, eval_id: str) -> Evaluation | None:
        self._ask("evals", eval_id)
        return super().eval(eval_id)

    def deployment(self, deployment_id: str) -> Deployment | None:
        self._ask("deployments", deployment_id)
        return super().deployment(deployment_id)

    def job_restart(self, restart_id: str) -> JobRestart | None:
        self._ask("restarts", restart_id)
        return super().job_restart(restart_id)

    def job_restarts_of(self, namespace: str, job_id: str) -> list[JobRestart]:
        self._ask("restarts_of", (namespace, job_id))
        return super().job_restarts_of(namespace, job_id)

    def node_pool(self, name: str) -> NodePool | None:
        self._ask("node_pools", name)
        return super().node_pool(name)

    def alloc_statuses(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        self._ask("refs:allocs", *ids)
        return super().alloc_statuses(ids)

    def eval_statuses(self, ids: Sequence[str]) -> dict[str, str]:
        self._ask("refs:evals", *ids)
        return super().eval_statuses(ids)

    def deployment_statuses(self, ids: Sequence[str]) -> dict[str, str]:
        self._ask("refs:deployments", *ids)
        return super().deployment_statuses(ids)


def _declared_rows(r: Reads) -> Iterator[tuple[str, Any]]:
    for table in ("allocs", "evals", "deployments", "nodes", "jobs", "restarts", "restarts_of", "node_pools"):
        yield from ((table, k) for k in getattr(r, table))
    yield from (("allocs", k) for k in r.new)
    for table, keys in r.refs.items():
        yield from ((f"refs:{table}", k) for k in keys)


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: e.type)
def test_an_event_declares_the_rows_it_reads(event: Event) -> None:
    state = _ReadsRecorder()
    apply(state, 1, event)
    asked = {(table, k) for table, keys in state.asked.items() for k in keys}
    r = Reads()
    event.reads(r)
    assert asked <= set(_declared_rows(r)), asked - set(_declared_rows(r))


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: e.type)
def test_an_event_names_the_evals_it_writes(event: Event) -> None:
    state = TrackedState()
    state.changes = Changes()
    apply(state, 1, event)
    assert list(state.changes.written.get("evals", {})) == [e.id for e in event.evals_made()]


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: e.type)
def test_an_event_round_trips_through_the_log_form(event: Event) -> None:
    back = decode_event(encode_event_json(event))
    assert type(back) is type(event)
    assert back == event


def test_a_tracked_state_records_every_write_of_the_reducer() -> None:
    writes = [
        name
        for name in dir(StateWriter)
        if name.startswith(("upsert_", "delete_")) or name in ("place_new", "place_columns")
    ]
    assert len(writes) >= 14
    assert [w for w in writes if w not in TrackedState.__dict__] == []


class NodeNoted(NodeUpdate):
    """A node's description changed: declared here alone, in a test."""

    type: Literal["TestNodeNoted"] = "TestNodeNoted"
    nomad_event_type: ClassVar[str | None] = "NodeNoted"
    note: str

    def apply_to(self, state: StateWriter, index: int) -> None:
        self.update_node(state, index, status_description=self.note)


@pytest.fixture
def noted() -> Iterator[type[NodeNoted]]:
    yield NodeNoted
    EVENT_TYPES.pop("TestNodeNoted")


def test_a_new_event_type_is_one_declaration(noted: type[NodeNoted]) -> None:
    state = TrackedState()
    stream_events(state, 1, NodeRegistered(node=Node(id="n1")))
    logged = decode_event(encode_event_json(noted(node_id="n1", note="rack moved")))
    assert isinstance(logged, noted)
    r = Reads()
    logged.reads(r)
    assert r.nodes == ["n1"]
    assert has_stream_events("TestNodeNoted")
    (out,) = stream_events(state, 2, logged)
    assert (out["Topic"], out["Type"], out["Key"], out["Index"]) == ("Node", "NodeNoted", "n1", 2)
    assert out["Payload"]["Node"]["StatusDescription"] == "rack moved"


def test_an_event_that_leaves_out_a_declaration_is_refused() -> None:
    with pytest.raises(TypeError, match="does not declare apply_to, nomad_event_type"):

        class Incomplete(Event):
            type: Literal["TestIncomplete"] = "TestIncomplete"

            def stream(self) -> str:
                return "test"

            def reads(self, r: Reads) -> None:
                pass

    assert "TestIncomplete" not in EVENT_TYPES


def test_an_event_type_is_declared_once() -> None:
    with pytest.raises(TypeError, match="declared twice"):

        class Again(NodeUpdate):
            type: Literal["NodeStatusUpdated"] = "NodeStatusUpdated"
            nomad_event_type: ClassVar[str | None] = None

            def apply_to(self, state: StateWriter, index: int) -> None:
                pass


def test_the_catalogue_table_names_every_type() -> None:
    table = (Path(__file__).parents[3] / "docs" / "events.md").read_text()
    named = {
        name for row in table.splitlines() if row.startswith("| ") for name in row.split("|")[1].split(",")
    }
    assert [t for t in _declared() if t not in {n.strip() for n in named}] == []
