"""/v1/job/:id/restart...: Drover's durable job restarts (Nomad has no such API:
`nomad job restart` drives one from the CLI): start one, list a
job's, read one (a blocking query: how a CLI attaches), pause, resume and cancel."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import BlockingDep, CommandsDep
from drover.api.jsondecode import JsonRoute
from drover.api.requestmodels import JobRestartRequest
from drover.control.commands import jobrestarts
from drover.control.commands.jobrestarts import JobRestartChange, JobRestartOptions
from drover.runtime.watches import job_key, restart_key

router = APIRouter(route_class=JsonRoute, tags=["job-restarts"])


@router.put("/v1/job/{job_id:path}/restart")
@router.post("/v1/job/{job_id:path}/restart")
async def start_restart(
    job_id: str, commands: CommandsDep, body: JobRestartRequest | None = None, namespace: str = "default"
) -> dict[str, Any]:
    b = body or JobRestartRequest()
    opts = JobRestartOptions(
        batch_size=b.batch_size, batch_wait=b.batch_wait, groups=b.groups, tasks=b.tasks, all_tasks=b.all_tasks,
        reschedule=b.reschedule, on_error=b.on_error, health_check=b.health_check,
    )  # fmt: skip
    change, positions = await commands.run(
        lambda reads: jobrestarts.start(reads, namespace, job_id, opts, time.time_ns()), span="job.restart"
    )
    assert change.restart is not None
    return {"RestartID": change.restart.id, "Index": positions[-1]}


@router.get("/v1/job/{job_id:path}/restarts")
async def list_restarts(
    job_id: str, request: Request, blocking: BlockingDep, namespace: str = "default"
) -> Response:
    def fn() -> Any:
        if not blocking.reads.job_exists(namespace, job_id):
            return None
        return blocking.reads.job_restarts_of(namespace, job_id)

    return await blocking.read(request, fn, [job_key(namespace, job_id)])


@router.get("/v1/job/{job_id:path}/restart/{restart_id}")
async def read_restart(
    job_id: str, restart_id: str, request: Request, blocking: BlockingDep, namespace: str = "default"
) -> Response:
    def fn() -> Any:
        r = blocking.reads.job_restart(restart_id)
        return r if r is not None and (r.namespace, r.job_id) == (namespace, job_id) else None

    return await blocking.read(request, fn, [restart_key(restart_id)])


def _answer(change: JobRestartChange, positions: list[int]) -> dict[str, Any]:
    assert change.restart is not None
    return {"RestartID": change.restart.id, "Index": positions[-1]}


@router.delete("/v1/job/{job_id:path}/restart/{restart_id}")
async def cancel_restart(
    job_id: str, restart_id: str, commands: CommandsDep, namespace: str = "default"
) -> dict[str, Any]:
    return _answer(
        *await commands.run(
            lambda reads: jobrestarts.cancel(reads, namespace, job_id, restart_id, time.time_ns())
        )
    )


@router.put("/v1/job/{job_id:path}/restart/{restart_id}/pause")
@router.post("/v1/job/{job_id:path}/restart/{restart_id}/pause")
async def pause_restart(
    job_id: str, restart_id: str, commands: CommandsDep, namespace: str = "default"
) -> dict[str, Any]:
    return _answer(
        *await commands.run(
            lambda reads: jobrestarts.pause(reads, namespace, job_id, restart_id, time.time_ns())
        )
    )


@router.put("/v1/job/{job_id:path}/restart/{restart_id}/resume")
@router.post("/v1/job/{job_id:path}/restart/{restart_id}/resume")
async def resume_restart(
    job_id: str, restart_id: str, commands: CommandsDep, namespace: str = "default"
) -> dict[str, Any]:
    return _answer(
        *await commands.run(
            lambda reads: jobrestarts.resume(reads, namespace, job_id, restart_id, time.time_ns())
        )
    )
