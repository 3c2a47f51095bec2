"""Drover's events as Nomad's stream events: one log, applied in order, and what each position
answers (topic, type, key, namespace, filter keys; payloads whole, read after the change)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from drover.model import Allocation, AllocDeploymentStatus, Deployment, Evaluation, Job, Node
from drover.model.alloc import DesiredTransition
from drover.model.changes import TrackedState
from drover.model.deployment import DeploymentState
from drover.model.events import (
    AllocClientUpdate,
    AllocsClientUpdated,
    AllocsTransitioned,
    DeploymentUpdated,
    EvalsCollected,
    EvalsUpserted,
    Event,
    JobDeregistered,
    JobRegistered,
    JobRestartStarted,
    NodeDeregistered,
    NodeDrainUpdated,
    NodeEligibilityUpdated,
    NodePoolDeleted,
    NodePoolUpserted,
    NodeRegistered,
    NodeStatusUpdated,
    PlanApplied,
    SchedulerConfigUpdated,
)
from drover.model.jobrestart import JobRestart
from drover.model.nodepool import NodePool
from drover.model.schedulerconfig import SchedulerConfiguration
from drover.model.streamevents import matches, parse_topics, stream_event_texts, stream_events

DEP = Deployment(id="d1", job_id="web", task_groups={"g": DeploymentState(desired_total=1)})
ALLOC = Allocation(id="a1", job_id="web", task_group="g", node_id="n1", deployment_id="d1")
HEALTHY = AllocDeploymentStatus(healthy=True, timestamp=1)
EVAL2 = Evaluation(id="e2", job_id="web", triggered_by="alloc-stop")

# (event, [(Topic, Type, Key, Namespace, FilterKeys)], a payload member to check: (topic, key, value))
LOG: list[tuple[Event, list[tuple[str, str, str, str, list[str] | None]], tuple[str, str, Any] | None]] = [
    (NodeRegistered(node=Node(id="n1")), [("Node", "NodeRegistration", "n1", "", None)], ("Node", "ID", "n1")),
    (
        NodeStatusUpdated(node_id="n1", status="ready"),
        [("Node", "NodeStreamEvent", "n1", "", None)],
        ("Node", "Status", "ready"),
    ),
    (
        NodeEligibilityUpdated(node_id="n1", eligibility="ineligible"),
        [("Node", "NodeEligibility", "n1", "", None)],
        ("Node", "SchedulingEligibility", "ineligible"),
    ),
    (
        NodeDrainUpdated(node_id="n1", eligibility="eligible"),
        [("Node", "NodeDrain", "n1", "", None)],
        ("Node", "SchedulingEligibility", "eligible"),
    ),
    (JobRegistered(job=Job(id="web")), [("Job", "JobRegistered", "web", "default", None)], ("Job", "ID", "web")),
    (
        EvalsUpserted(evals=[Evaluation(id="e1", job_id="web")]),
        [("Evaluation", "EvaluationUpdated", "e1", "default", ["web"])],
        ("Evaluation", "JobID", "web"),
    ),
    (
        PlanApplied(eval_id="e1", job_id="web", allocs=[ALLOC], deployment=DEP),
        [
            ("Deployment", "PlanResult", "d1", "default", ["web"]),
            ("Allocation", "PlanResult", "a1", "default", ["web", "d1"]),
        ],
        ("Allocation", "NodeID", "n1"),
    ),
    (
        # A delta: the payload is the whole alloc after it, and the deployment it counts in.
        AllocsClientUpdated(updates=[AllocClientUpdate(id="a1", client_status="running", deployment_status=HEALTHY)]),
        [
            ("Deployment", "AllocationUpdated", "d1", "default", ["web"]),
            ("Allocation", "AllocationUpdated", "a1", "default", ["web", "d1"]),
        ],
        ("Allocation", "ClientStatus", "running"),
    ),
    (
        AllocsTransitioned(transitions={"a1": DesiredTransition(migrate=True)}, evals=[EVAL2]),
        [
            ("Evaluation", "AllocationUpdateDesiredStatus", "e2", "default", ["web"]),
            ("Allocation", "AllocationUpdateDesiredStatus", "a1", "default", ["web", "d1"]),
        ],
        ("Allocation", "TaskGroup", "g"),
    ),
    (
        DeploymentUpdated(deployment_id="d1", status="failed"),
        [("Deployment", "DeploymentStatusUpdate", "d1", "default", ["web"])],
        ("Deployment", "Status", "failed"),
    ),
    (
        JobRestartStarted(restart=JobRestart(id="r1", job_id="web")),
        [("JobRestart", "JobRestartStarted", "r1", "default", ["web"])],
        ("JobRestart", "JobID", "web"),
    ),
    # A node registering into a pool nobody created creates it: the pool is streamed too.
    (
        NodeRegistered(node=Node(id="n2", node_pool="gpu")),
        [("Node", "NodeRegistration", "n2", "", None), ("NodePool", "NodeRegistration", "gpu", "", None)],
        ("NodePool", "Name", "gpu"),
    ),
    (
        NodePoolUpserted(pool=NodePool(name="gpu", description="GPUs")),
        [("NodePool", "NodePoolUpserted", "gpu", "", None)],
        ("NodePool", "Description", "GPUs"),
    ),
    (NodePoolDeleted(name="gpu"), [("NodePool", "NodePoolDeleted", "gpu", "", None)], ("NodePool", "Description", "GPUs")),
    # No stream events for what Nomad's stream does not carry.
    (SchedulerConfigUpdated(config=SchedulerConfiguration(scheduler_algorithm="spread")), [], None),
    (EvalsCollected(evals=["nope"]), [], None),
    # A purge and a deregistration describe the object as it was last.
    (JobDeregistered(namespace="default", job_id="web", purge=True), [("Job", "JobDeregistered", "web", "default", None)], ("Job", "ID", "web")),
    (NodeDeregistered(node_id="n1"), [("Node", "NodeDeregistration", "n1", "", None)], ("Node", "ID", "n1")),
]  # fmt: skip


def test_each_event_of_a_log_as_nomad_streams_it() -> None:
    state = TrackedState()
    for position, (event, expected, member) in enumerate(LOG, start=1):
        out = stream_events(state, position, event)
        assert [
            (e["Topic"], e["Type"], e["Key"], e["Namespace"], e["FilterKeys"]) for e in out
        ] == expected, event.type
        assert all(e["Index"] == position for e in out)
        if member is not None:
            topic, name, value = member
            docs = [e["Payload"][topic] for e in out if e["Topic"] == topic]
            assert docs and docs[0][name] == value, (event.type, docs)
        assert state.index == position


def test_the_texts_are_the_events_as_json() -> None:
    as_dicts, as_texts = TrackedState(), TrackedState()
    for position, (event, _, _) in enumerate(LOG, start=1):
        events = stream_events(as_dicts, position, event)
        texts = stream_event_texts(as_texts, position, event)
        assert [t for _, t in texts] == [json.dumps(e, separators=(",", ":")).encode() for e in events], (
            event.type
        )
        assert [h for h, _ in texts] == [{k: v for k, v in e.items() if k != "Payload"} for e in events]
        assert as_texts.index == position


def test_payloads_carry_the_index_of_the_change() -> None:
    state = TrackedState()
    stream_events(state, 1, JobRegistered(job=Job(id="web")))
    (event,) = stream_events(state, 7, JobRegistered(job=Job(id="web", priority=70)))
    assert event["Payload"]["Job"]["ModifyIndex"] == 7
    assert event["Payload"]["Job"]["CreateIndex"] == 1


@pytest.mark.parametrize(
    ("values", "topics", "problems"),
    [
        ([], {"*": {"*"}}, []),
        (["Job"], {"Job": {"*"}}, []),
        (["Job:web", "Job:api", "Node:*"], {"Job": {"web", "api"}, "Node": {"*"}}, []),
        (["*:web"], {"*": {"web"}}, []),
        (["a:b:c"], {}, ["Invalid topic 'a:b:c': expected Topic or Topic:Key"]),
        (["Job:"], {}, ["Invalid topic 'Job:': expected Topic or Topic:Key"]),
        (["Nope", "Job"], {"Job": {"*"}}, ["Unknown topic 'Nope'"]),
    ],
)
def test_topic_queries(values: list[str], topics: dict[str, set[str]], problems: list[str]) -> None:
    got, found = parse_topics(values)
    assert got == topics
    assert len(found) == len(problems)
    assert all(f.startswith(p) for f, p in zip(found, problems, strict=True))


def _ev(topic: str, key: str, ns: str = "default", filter_keys: list[str] | None = None) -> dict[str, Any]:
    return {"Topic": topic, "Key": key, "Namespace": ns, "FilterKeys": filter_keys}


@pytest.mark.parametrize(
    ("event", "topics", "namespace", "sent"),
    [
        (_ev("Job", "web"), ["*"], "default", True),
        (_ev("Job", "web"), ["Job"], "default", True),
        (_ev("Job", "web"), ["Job:web"], "default", True),
        (_ev("Job", "web"), ["Job:api"], "default", False),
        (_ev("Job", "web"), ["Evaluation"], "default", False),
        (_ev("Allocation", "a1", filter_keys=["web", "d1"]), ["Allocation:web"], "default", True),
        (_ev("Allocation", "a1", filter_keys=["web", "d1"]), ["Allocation:d1"], "default", True),
        (_ev("Allocation", "a1", filter_keys=["web", "d1"]), ["Allocation:api"], "default", False),
        (_ev("Allocation", "a1", filter_keys=["web"]), ["*:web"], "default", True),
        (_ev("Job", "web", ns="prod"), ["*"], "default", False),
        (_ev("Job", "web", ns="prod"), ["*"], "prod", True),
        (_ev("Job", "web", ns="prod"), ["*"], "*", True),
        (_ev("Node", "n1", ns=""), ["Node"], "prod", True),
    ],
)
def test_which_events_a_subscriber_is_sent(
    event: dict[str, Any], topics: list[str], namespace: str, sent: bool
) -> None:
    parsed, problems = parse_topics(topics)
    assert problems == []
    assert matches(event, parsed, namespace) is sent
