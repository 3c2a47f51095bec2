"""The documents the API answers with, beyond the models' own: list stubs as Nomad's lists
show them, and JSON for models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from drover.model import Allocation, Job, Node

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


def job_stub(j: Job) -> dict[str, Any]:
    return {
        "ID": j.id, "ParentID": j.parent_id, "Name": j.name, "Namespace": j.namespace, "Datacenters": j.datacenters,
        "NodePool": j.node_pool, "Type": j.type, "Priority": j.priority, "Status": j.status, "Stop": j.stop,
        "Version": j.version, "CreateIndex": j.create_index, "ModifyIndex": j.modify_index,
        "JobModifyIndex": j.job_modify_index, "SubmitTime": j.submit_time,
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
