"""/v1/job/:id/revert and /v1/job/:id/stable: a job's earlier version registered again, and a
version marked stable or not."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request

from drover.api.aclguard import is_management
from drover.api.deps import CommandsDep
from drover.api.jsondecode import JsonRoute
from drover.api.requestmodels import JobRevertRequest, JobStabilityRequest
from drover.control.change import Change
from drover.control.commands import jobversions
from drover.control.commands.jobs import JobChange
from drover.control.commands.operator import Admission
from drover.control.errors import Invalid
from drover.runtime.store.queries import Reads

router = APIRouter(route_class=JsonRoute, tags=["jobs"])


@router.put("/v1/job/{job_id:path}/revert")
@router.post("/v1/job/{job_id:path}/revert")
async def revert(
    job_id: str, request: Request, body: JobRevertRequest, commands: CommandsDep, namespace: str = "default"
) -> dict[str, Any]:
    """Nomad's job revert; answers a JobRegisterResponse."""
    problems = jobversions.request_problems(job_id, body.job_id, body.job_version)
    if problems:
        raise Invalid.of(problems)

    management = is_management(request)

    def decide(reads: Reads) -> JobChange:
        # Admitted as a register of the version reverted to (its pool must still exist).
        job = reads.job_version(namespace, job_id, body.job_version) or reads.job(namespace, job_id)
        admission = (
            Admission(*reads.admission(job.node_pool), management=management) if job is not None else None
        )
        return jobversions.revert(
            reads,
            namespace,
            job_id,
            body.job_version,
            body.enforce_prior_version,
            time.time_ns(),
            admission=admission,
        )

    change, positions = await commands.run(decide, span="job.revert", what=f"job {job_id} reverted")
    # A periodic or parameterized job is registered again without an eval.
    return {
        "EvalID": change.eval_ids[0] if change.evals else "",
        "EvalCreateIndex": positions[-1] if change.evals else 0,
        "JobModifyIndex": positions[0],
        "Warnings": "",
        "Index": positions[-1],
        "LastContact": 0,
        "KnownLeader": True,
    }


@router.put("/v1/job/{job_id:path}/stable")
@router.post("/v1/job/{job_id:path}/stable")
async def stable(
    job_id: str, body: JobStabilityRequest, commands: CommandsDep, namespace: str = "default"
) -> dict[str, Any]:
    """Nomad's job stable; answers a JobStabilityResponse (the index)."""
    problems = jobversions.request_problems(job_id, body.job_id, body.job_version)
    if problems:
        raise Invalid.of(problems)

    def decide(reads: Reads) -> Change:
        return jobversions.set_stability(reads, namespace, job_id, body.job_version, body.stable)

    _, positions = await commands.run(decide)
    return {"Index": positions[-1]}
