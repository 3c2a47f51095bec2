"""/v1/scaling/policies and /v1/scaling/policy/:id: the jobs' scaling policies, as the Nomad
Autoscaler reads them (drover.model.scalingpolicy)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import BlockingDep
from drover.api.jsondecode import JsonRoute
from drover.api.listfilter import filtered
from drover.model.job import ScalingPolicy
from drover.model.scalingpolicy import job_policies, matching, stub
from drover.runtime.store.queries import Reads
from drover.runtime.watches import list_keys

router = APIRouter(route_class=JsonRoute, tags=["scaling"])


def _policies(reads: Reads, namespace: str) -> list[ScalingPolicy]:
    """The policies of the namespace's jobs (`*`: of every one's)."""
    return [p for job in reads.jobs(namespace) for p in job_policies(job)]


@router.get("/v1/scaling/policies")
async def list_policies(
    request: Request, blocking: BlockingDep, namespace: str = "default", job: str = "", type: str = ""
) -> Response:
    """Nomad's ScalingPolicyListStubs, of one job (`job`) and of a type prefix (`type`)."""

    keep = filtered(request)

    def fn() -> Any:
        return keep([stub(p) for p in matching(_policies(blocking.reads, namespace), job, type)])

    return await blocking.read(request, fn, list_keys("jobs", namespace))


@router.get("/v1/scaling/policy/{policy_id}")
async def read_policy(
    policy_id: str, request: Request, blocking: BlockingDep, namespace: str = "default"
) -> Response:
    """One policy, whole; 404 for an unknown ID."""

    def fn() -> Any:
        return next((p for p in _policies(blocking.reads, namespace) if p.id == policy_id), None)

    return await blocking.read(request, fn, list_keys("jobs", namespace))
