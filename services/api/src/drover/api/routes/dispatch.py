"""/v1/job/:id/dispatch: run a parameterized job, as Nomad's dispatch (the idempotency token a
query parameter, as Nomad's API client sends it)."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request

from drover.api.aclguard import is_management
from drover.api.deps import CommandsDep
from drover.api.errors import ApiError
from drover.api.jsondecode import JsonRoute
from drover.api.requestmodels import JobDispatchRequest
from drover.control.commands import dispatch
from drover.control.commands.dispatch import DispatchChange, DispatchRequest
from drover.control.commands.operator import Admission
from drover.runtime.store.queries import Reads

router = APIRouter(route_class=JsonRoute, tags=["jobs"])


@router.put("/v1/job/{job_id:path}/dispatch")
@router.post("/v1/job/{job_id:path}/dispatch")
async def dispatch_job(
    job_id: str,
    request: Request,
    commands: CommandsDep,
    body: JobDispatchRequest | None = None,
    namespace: str = "default",
    idempotency_token: str = "",
) -> dict[str, Any]:
    b = body or JobDispatchRequest()
    if b.job_id and b.job_id != job_id:
        raise ApiError(400, "Job ID does not match")
    req = DispatchRequest(
        payload=b.payload, meta=b.meta, id_prefix_template=b.id_prefix_template, priority=b.priority,
        idempotency_token=idempotency_token,
    )  # fmt: skip

    management = is_management(request)

    def decide(reads: Reads) -> DispatchChange:
        token_child, token_version = (
            reads.dispatched_with_token(namespace, job_id, idempotency_token)
            if idempotency_token
            else (None, 0)
        )
        return dispatch.dispatch(
            reads.job(namespace, job_id),
            req,
            token_child,
            token_version,
            time.time_ns(),
            admission=Admission(reads.scheduler_config(), management=management),
        )

    change, positions = await commands.run(decide, span="job.dispatch", what=f"job {job_id} dispatched")
    child = change.child
    assert child is not None
    if change.repeated:
        # Nomad's answer to a token already used: the child it dispatched, and no eval.
        return {"DispatchedJobID": child.id, "EvalID": "", "EvalCreateIndex": 0,
                "JobCreateIndex": child.create_index, "Index": child.modify_index}  # fmt: skip
    return {
        "DispatchedJobID": child.id,
        "EvalID": change.eval_ids[0] if change.evals else "",
        "EvalCreateIndex": positions[1] if change.evals else 0,
        "JobCreateIndex": positions[0],
        "Index": positions[-1],
    }
