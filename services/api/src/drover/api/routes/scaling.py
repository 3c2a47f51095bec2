"""/v1/job/:id/scale: a task group's count set (or a scaling event recorded), and the job's
scale status."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.aclguard import is_management
from drover.api.deps import BlockingDep, CommandsDep
from drover.api.jsondecode import JsonRoute
from drover.api.requestmodels import ScalingRequest
from drover.control.commands import scaling
from drover.control.commands.jobs import JobChange
from drover.control.commands.operator import Admission
from drover.model.scaling import scale_status
from drover.runtime.store.queries import Reads
from drover.runtime.watches import job_key

router = APIRouter(route_class=JsonRoute, tags=["jobs"])


@router.get("/v1/job/{job_id:path}/scale")
async def read_scale_status(
    job_id: str, request: Request, blocking: BlockingDep, namespace: str = "default"
) -> Response:
    """Nomad's JobScaleStatusResponse: per group, the desired count, its live allocs (placed,
    running, healthy, unhealthy; canaries left out) and its recent scaling events."""

    def fn() -> Any:
        reads = blocking.reads
        job = reads.job(namespace, job_id)
        if job is None:
            return None
        allocs = reads.allocs(namespace=namespace, job_id=job_id)
        return scale_status(job, allocs, reads.scaling_events(namespace, job_id))

    return await blocking.read(request, fn, [job_key(namespace, job_id)])


@router.put("/v1/job/{job_id:path}/scale")
@router.post("/v1/job/{job_id:path}/scale")
async def scale(
    job_id: str, request: Request, body: ScalingRequest, commands: CommandsDep, namespace: str = "default"
) -> dict[str, Any]:
    req = scaling.ScaleRequest(
        group=body.target.group,
        count=body.count,
        message=body.message,
        error=body.error,
        meta=body.meta,
        job_modify_index=body.job_modify_index,
        target_job=body.target.job,
        target_namespace=body.target.namespace,
    )

    management = is_management(request)

    def decide(reads: Reads) -> JobChange:
        job, version = reads.job(namespace, job_id), reads.job_stream_version(namespace, job_id)
        deployment = reads.active_deployment(namespace, job_id) if req.count is not None else None
        return scaling.scale(
            job,
            job_id,
            namespace,
            req,
            version,
            time.time_ns(),
            deployment,
            admission=Admission(reads.scheduler_config(), management=management),
        )

    change, positions = await commands.run(decide)
    assert change.job is not None
    if req.count is None:  # only a scaling event
        return {"EvalID": "", "EvalCreateIndex": 0, "JobModifyIndex": change.job.modify_index,
                "Index": positions[-1], "Warnings": ""}  # fmt: skip
    # A periodic or parameterized job is scaled without an eval.
    return {"EvalID": change.eval_ids[0] if change.evals else "", "EvalCreateIndex": positions[-1] if change.evals else 0,
            "JobModifyIndex": positions[0], "Index": positions[-1], "Warnings": ""}  # fmt: skip
