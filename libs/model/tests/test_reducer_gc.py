"""The reducer's part for garbage collection (drover.model.gcreducer): collected objects leave
the state and its indexes, each only if it is still what the collector saw."""

from __future__ import annotations

from drover.model import Allocation, Deployment, Evaluation, Job, Node, Resources
from drover.model.events import (
    DeploymentsCollected,
    EvalsCollected,
    JobCollected,
    JobRegistered,
    NodesCollected,
    NodeStatusUpdated,
)
from drover.model.reducer import apply
from drover.model.state import InMemoryState


def _alloc(alloc_id: str, **kw: object) -> Allocation:
    return Allocation(
        id=alloc_id, job_id="web", node_id="n1", resources=Resources(cpu=100, memory_mb=64), **kw
    )  # type: ignore[arg-type]


def test_evals_and_allocs_go_only_while_terminal() -> None:
    st = InMemoryState()
    for e in ("done", "failed", "pending", "blocked"):
        status = "complete" if e == "done" else e
        st.upsert_eval(Evaluation(id=e, job_id="web", status=status))
    for a in (
        _alloc("complete", client_status="complete"),
        _alloc("stopped", desired_status="stop"),
        _alloc("lost", client_status="lost"),
        _alloc("runs", client_status="running"),
        _alloc("stopping", desired_status="stop", client_status="running"),
        _alloc("pending"),
    ):
        st.upsert_alloc(a)
    used = st.node_usage("n1")
    apply(st, 10, EvalsCollected(evals=[*st.evals, "unknown"], allocs=[*st.allocs, "unknown"]))
    assert sorted(st.evals) == ["blocked", "pending"]
    assert sorted(st.allocs) == ["pending", "runs", "stopping"]
    assert sorted(a.id for a in st.allocs_by_job("default", "web")) == ["pending", "runs", "stopping"]
    assert sorted(a.id for a in st.allocs_by_node("n1")) == ["pending", "runs", "stopping"]
    assert st.node_usage("n1") == used  # terminal allocs used nothing
    assert st.index == 10
    apply(st, 11, EvalsCollected(allocs=["pending", "runs", "stopping"]))
    assert len(st.allocs) == 3


def test_deployments_go_only_while_inactive_and_a_job_s_latest_is_the_newest_left() -> None:
    st = InMemoryState()
    st.upsert_deployment(Deployment(id="old", job_id="web", status="successful", create_index=1))
    st.upsert_deployment(Deployment(id="new", job_id="web", status="failed", create_index=2))
    st.upsert_deployment(Deployment(id="live", job_id="api", status="running", create_index=3))
    latest = st.latest_deployment("default", "web")
    assert latest is not None and latest.id == "new"
    apply(st, 5, DeploymentsCollected(deployments=["new", "live"]))
    assert sorted(st.deployments) == ["live", "old"]
    latest = st.latest_deployment("default", "web")
    assert latest is not None and latest.id == "old"
    apply(st, 6, DeploymentsCollected(deployments=["old"]))
    assert st.latest_deployment("default", "web") is None


def test_a_job_goes_with_its_versions_unless_it_changed_since_the_collector_decided() -> None:
    st = InMemoryState()
    apply(st, 1, JobRegistered(job=Job(id="web", stop=True)))
    apply(st, 2, JobRegistered(job=Job(id="api", stop=True)))
    apply(st, 3, JobRegistered(job=Job(id="api", version=1)))  # registered again after the decision
    apply(st, 4, JobCollected(job_id="web", as_of=2))
    apply(st, 5, JobCollected(job_id="api", as_of=2))
    assert list(st.jobs) == [("default", "api")]
    assert ("default", "web") not in st.job_versions
    assert st.job_version("default", "api", 1) is not None


def test_a_node_goes_unless_it_changed_since_the_collector_decided() -> None:
    st = InMemoryState()
    for i, node_id in enumerate(("gone", "back"), start=1):
        apply(st, i, NodeStatusUpdated(node_id=node_id, status="down"))  # unknown node: nothing
        st.upsert_node(Node(id=node_id, status="down", modify_index=i))
    apply(st, 3, NodeStatusUpdated(node_id="back", status="ready"))
    apply(st, 4, NodesCollected(nodes=["gone", "back", "unknown"], as_of=2))
    assert list(st.nodes) == ["back"]
