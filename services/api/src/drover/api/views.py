"""The documents the API answers with, beyond the models' own: list stubs as Nomad's lists
show them, and JSON for models."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from drover.model import Allocation, Evaluation, Job, Node
from drover.model.summary import JobSummary

# A read whose answer is JSON null rather than 404 (a job with no deployment).
NO_DEPLOYMENT = object()


def as_json(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(by_alias=True, mode="json")
    if isinstance(obj, list):
        return [as_json(o) for o in obj]
    if isinstance(obj, dict):
        return {k: as_json(v) for k, v in obj.items()}
    return obj


def job_stub(j: Job, summary: JobSummary) -> dict[str, Any]:
    return {
        "ID": j.id, "ParentID": j.parent_id, "Name": j.name, "Namespace": j.namespace, "Datacenters": j.datacenters,
        "NodePool": j.node_pool, "Type": j.type, "Priority": j.priority, "Status": j.status, "Stop": j.stop,
        "Version": j.version, "CreateIndex": j.create_index, "ModifyIndex": j.modify_index,
        "JobModifyIndex": j.job_modify_index, "SubmitTime": j.submit_time,
        "Periodic": j.periodic is not None, "ParameterizedJob": j.is_parameterized(), "JobSummary": summary.to_api(),
    }  # fmt: skip


def alloc_stub(a: Allocation) -> dict[str, Any]:
    doc: dict[str, Any] = a.to_api()
    doc.pop("Metrics", None)
    return doc


def node_stub(n: Node, *, resources: bool = False, os: bool = False) -> dict[str, Any]:
    """A node as Nomad's list shows it; `resources` adds its resources, `os` its Attributes
    with os.name alone (Nomad's NodeStubFields)."""
    stub: dict[str, Any] = {
        "ID": n.id, "Name": n.name, "Datacenter": n.datacenter, "NodeClass": n.node_class, "NodePool": n.node_pool,
        "Status": n.status, "StatusDescription": n.status_description, "SchedulingEligibility": n.scheduling_eligibility,
        "Drain": n.draining(), "CreateIndex": n.create_index, "ModifyIndex": n.modify_index,
    }  # fmt: skip
    if resources:
        stub["NodeResources"] = n.node_resources.to_api()
        stub["ReservedResources"] = n.reserved_resources.to_api()
    if os:
        stub["Attributes"] = {"os.name": n.attributes.get("os.name", "")}
    return stub


# Evals followed from one through their links, at most (a chain of reschedules is short).
RELATED_MAX = 100


def related_evals(
    reads: Any, ev: Evaluation, lookup: Callable[[str], Evaluation | None] | None = None
) -> list[Evaluation]:
    """The evals linked to `ev` through PreviousEval, NextEval and BlockedEval, and theirs in
    turn (Nomad's EvalsRelatedToID: what `?related=true` adds as RelatedEvals), oldest first."""
    get = lookup or reads.eval
    seen = {ev.id}
    out: list[Evaluation] = []
    todo = [ev]
    while todo and len(out) < RELATED_MAX:
        cur = todo.pop()
        for link in (cur.previous_eval, cur.next_eval, cur.blocked_eval):
            if not link or link in seen:
                continue
            seen.add(link)
            found = get(link)
            if found is not None:
                out.append(found)
                todo.append(found)
    return sorted(out, key=lambda e: (e.create_index, e.id))


def eval_stub(e: Evaluation) -> dict[str, Any]:
    """An eval as Nomad's EvalStub shows it (RelatedEvals' members)."""
    return {
        "ID": e.id, "Namespace": e.namespace, "Priority": e.priority, "Type": e.type, "TriggeredBy": e.triggered_by,
        "JobID": e.job_id, "NodeID": e.node_id, "DeploymentID": e.deployment_id, "Status": e.status,
        "StatusDescription": e.status_description, "WaitUntil": e.wait_until, "NextEval": e.next_eval,
        "PreviousEval": e.previous_eval, "BlockedEval": e.blocked_eval, "CreateIndex": e.create_index,
        "ModifyIndex": e.modify_index, "CreateTime": e.create_time, "ModifyTime": e.modify_time,
    }  # fmt: skip
