"""/v1/deployments and /v1/deployment/...: reads, and the operator's promote, pause/resume and
fail."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import BlockingDep, CommandsDep
from drover.api.jsondecode import JsonRoute
from drover.api.listfilter import filtered
from drover.api.requestmodels import DeploymentPauseRequest, DeploymentPromoteRequest
from drover.api.views import alloc_stub
from drover.control.commands import deployments
from drover.control.commands.deployments import DeploymentChanged
from drover.model.namespace import DEFAULT_NAMESPACE
from drover.runtime.watches import deployment_key, list_keys

router = APIRouter(route_class=JsonRoute, tags=["deployments"])


@router.get("/v1/deployments")
async def list_deployments(
    request: Request, blocking: BlockingDep, prefix: str = "", namespace: str = DEFAULT_NAMESPACE
) -> Response:
    """The namespace's deployments (`*`: every one's), the newest first."""
    keep = filtered(request)
    return await blocking.read(
        request,
        lambda: keep(blocking.reads.all_deployments(prefix, namespace)),
        list_keys("deployments", namespace),
    )


@router.get("/v1/deployment/{deployment_id}")
async def read_deployment(deployment_id: str, request: Request, blocking: BlockingDep) -> Response:
    return await blocking.read(
        request, lambda: blocking.reads.deployment(deployment_id), [deployment_key(deployment_id)]
    )


@router.get("/v1/deployment/allocations/{deployment_id}")
async def deployment_allocs(deployment_id: str, request: Request, blocking: BlockingDep) -> Response:
    def fn() -> Any:
        dep = blocking.reads.deployment(deployment_id)
        if dep is None:
            return None
        return [alloc_stub(a) for a in blocking.reads.deployment_allocs(dep)]

    return await blocking.read(request, fn, [deployment_key(deployment_id)])


def _answer(change: DeploymentChanged, positions: list[int]) -> dict[str, Any]:
    index = positions[-1]
    return {
        "EvalID": change.eval_ids[0] if change.evals else "",
        "EvalCreateIndex": index,
        "DeploymentModifyIndex": index,
        "RevertedJobVersion": change.reverted.version if change.reverted is not None else None,
        "Index": index,
    }


@router.put("/v1/deployment/promote/{deployment_id}")
@router.post("/v1/deployment/promote/{deployment_id}")
async def promote_deployment(
    deployment_id: str, commands: CommandsDep, body: DeploymentPromoteRequest | None = None
) -> dict[str, Any]:
    body = body or DeploymentPromoteRequest()
    return _answer(
        *await commands.run(
            lambda reads: deployments.promote(reads, deployment_id, body.groups, body.all, time.time_ns())
        )
    )


@router.put("/v1/deployment/pause/{deployment_id}")
@router.post("/v1/deployment/pause/{deployment_id}")
async def pause_deployment(
    deployment_id: str, body: DeploymentPauseRequest, commands: CommandsDep
) -> dict[str, Any]:
    return _answer(
        *await commands.run(lambda reads: deployments.pause(reads, deployment_id, body.pause, time.time_ns()))
    )


@router.put("/v1/deployment/fail/{deployment_id}")
@router.post("/v1/deployment/fail/{deployment_id}")
async def fail_deployment(deployment_id: str, commands: CommandsDep) -> dict[str, Any]:
    return _answer(*await commands.run(lambda reads: deployments.fail(reads, deployment_id, time.time_ns())))
