"""/v1/jobs and /v1/job/:id: register, read, versions, allocations, evaluations, deployments,
summary, deregister, evaluate and the dry-run plan (scale: routes.scaling; revert and stable:
routes.jobversions). A job's ID may hold slashes (a dispatched child's `<job>/dispatch-...`):
the app matches the paths after the ID first."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.aclguard import is_management
from drover.api.blocking import Blocking
from drover.api.deps import BlockingDep, CommandsDep, ReadsDep
from drover.api.encoded import Encoded
from drover.api.errors import ApiError
from drover.api.jsondecode import JsonRoute
from drover.api.listfilter import filtered, filtered_paged
from drover.api.requestmodels import JobPlanRequest, JobRegisterRequest
from drover.api.views import NO_DEPLOYMENT, alloc_stub, as_json, job_stub
from drover.control.commands import jobs
from drover.control.commands.operator import Admission
from drover.control.diff.job import plan_diff, version_diffs
from drover.model import Job
from drover.model.namespace import DEFAULT_NAMESPACE
from drover.runtime.store.namespacereads import job_token
from drover.runtime.store.queries import Reads, load_snapshot
from drover.runtime.watches import children_key, job_key, list_keys

router = APIRouter(route_class=JsonRoute, tags=["jobs"])


@router.get("/v1/jobs")
async def list_jobs(
    request: Request, blocking: BlockingDep, prefix: str = "", namespace: str = DEFAULT_NAMESPACE
) -> Response:
    """The jobs of the namespace (`*`: of every one, by namespace then ID), paged by Nomad's
    `<namespace>.<id>` tokens."""

    def stubs(found: list[Job]) -> list[dict[str, Any]]:
        summaries = blocking.reads.summaries_by_job(found)
        return [job_stub(j, summaries[(j.namespace, j.id)]) for j in found]

    # ?filter= judges the whole job (as Nomad's does), with what its stub adds (Status, JobSummary).
    fn = filtered_paged(
        request,
        lambda start, limit: blocking.reads.jobs(namespace, prefix, start=start, limit=limit),
        job_token,
        shape=stubs,
        subject=lambda job, stub: {**as_json(job), **stub},
    )
    # A job's Status is derived from its allocs and evals.
    keys = [k for table in ("jobs", "allocs", "evals") for k in list_keys(table, namespace)]
    return await blocking.read(request, fn, keys)


def in_namespace(request: Request, job: Job, namespace: str) -> Job:
    """The job in the namespace Nomad writes it to: ?namespace= first, then the request's own
    Namespace (`namespace`), then the job's (default: `default`)."""
    chosen = request.query_params.get("namespace") or namespace or job.namespace or DEFAULT_NAMESPACE
    return job if chosen == job.namespace else job.model_copy(update={"namespace": chosen})


def registering(submitted: Job, enforce: int | None, management: bool) -> Callable[[Reads], jobs.JobChange]:
    """The decision of a job register (Nomad's Job.Register, with EnforceIndex when `enforce`
    is not None): what /v1/jobs and the console's Run append."""

    def decide(reads: Reads) -> jobs.JobChange:
        # Admitted against the namespace as it is when the register is decided.
        job = jobs.prepare(submitted, reads)
        existing, stream_version = reads.job_for_register(job.namespace, job.id)
        # A management token goes through RejectJobRegistration (Nomad's allowedRegistration).
        admission = Admission(*reads.admission(job.node_pool), management=management)
        return jobs.register(job, existing, stream_version, time.time_ns(), enforce, admission=admission)

    return decide


async def _register(request: Request, commands: CommandsDep, body: JobRegisterRequest) -> dict[str, Any]:
    submitted = in_namespace(request, body.job, body.namespace)
    enforce = body.job_modify_index if body.enforce_index else None
    decide = registering(submitted, enforce, is_management(request))
    change, positions = await commands.run(decide, span="job.register", what=f"job {submitted.id} registered")
    # A periodic or parameterized job is registered without an eval.
    return {
        "EvalID": change.eval_ids[0] if change.evals else "",
        "EvalCreateIndex": positions[1] if change.evals else 0,
        "JobModifyIndex": positions[0],
        "Warnings": body.warnings_with(change.warnings),
        "Index": positions[-1],
        "LastContact": 0,
        "KnownLeader": True,
    }


@router.put("/v1/jobs")
@router.post("/v1/jobs")
async def register_jobs(request: Request, body: JobRegisterRequest, commands: CommandsDep) -> dict[str, Any]:
    return await _register(request, commands, body)


@router.put("/v1/job/{job_id:path}")
@router.post("/v1/job/{job_id:path}")
async def register_job(
    job_id: str, request: Request, body: JobRegisterRequest, commands: CommandsDep
) -> dict[str, Any]:
    if body.job.id != job_id:
        raise ApiError(400, "Job ID does not match name")
    return await _register(request, commands, body)


@router.get("/v1/job/{job_id:path}")
async def read_job(job_id: str, request: Request, namespace: str = "default") -> Response:
    # The state from the app, not a dependency: FastAPI resolves one on every request.
    blocking: Blocking = request.app.state.blocking
    encoded: Encoded = request.app.state.encoded

    def read() -> tuple[int, bytes | None]:
        index, found = blocking.reads.job_doc_at(namespace, job_id)
        return index, None if found is None else encoded.job(found)

    return await blocking.read_kept(request, job_key(namespace, job_id), read)


@router.get("/v1/job/{job_id:path}/versions")
async def job_versions(
    job_id: str,
    request: Request,
    blocking: BlockingDep,
    namespace: str = "default",
    diffs: bool = False,
    diff_version: int | None = None,
) -> Response:
    """Newest first; with `diffs`, each version's diff from the next older one (or, with
    `diff_version`, from that version), as Nomad gives them."""

    def fn() -> Any:
        versions = blocking.reads.job_versions(namespace, job_id)
        if not versions:
            return None
        if not diffs:
            return {"Versions": versions, "Diffs": None}
        against = None
        if diff_version is not None:
            against = next((v for v in versions if v.version == diff_version), None)
            if against is None:
                raise ApiError(404, f"version {diff_version} not found")
        return {"Versions": versions, "Diffs": version_diffs(versions, against)}

    return await blocking.read(request, fn, [job_key(namespace, job_id)])


@router.get("/v1/job/{job_id:path}/allocations")
async def job_allocs(
    job_id: str, request: Request, blocking: BlockingDep, namespace: str = "default"
) -> Response:
    keep = filtered(request)

    def read() -> tuple[int, Any]:
        index, allocs = blocking.reads.job_allocs_at(namespace, job_id)
        return index, None if allocs is None else keep([alloc_stub(a) for a in allocs])

    return await blocking.read_at(request, read, [job_key(namespace, job_id)])


@router.get("/v1/job/{job_id:path}/evaluations")
async def job_evals(
    job_id: str, request: Request, blocking: BlockingDep, namespace: str = "default"
) -> Response:
    keep = filtered(request)

    def fn() -> Any:
        if not blocking.reads.job_exists(namespace, job_id):
            return None
        return keep(blocking.reads.evals(namespace=namespace, job_id=job_id))

    return await blocking.read(request, fn, [job_key(namespace, job_id)])


@router.get("/v1/job/{job_id:path}/deployments")
async def job_deployments(
    job_id: str, request: Request, blocking: BlockingDep, namespace: str = "default"
) -> Response:
    def fn() -> Any:
        if not blocking.reads.job_exists(namespace, job_id):
            return None
        return blocking.reads.deployments(namespace, job_id)

    return await blocking.read(request, fn, [job_key(namespace, job_id)])


@router.get("/v1/job/{job_id:path}/deployment")
async def job_latest_deployment(
    job_id: str, request: Request, blocking: BlockingDep, namespace: str = "default"
) -> Response:
    def fn() -> Any:
        if not blocking.reads.job_exists(namespace, job_id):
            return None
        deps = blocking.reads.deployments(namespace, job_id)
        # Nomad answers null when the job has no deployment.
        return deps[0] if deps else NO_DEPLOYMENT

    return await blocking.read(request, fn, [job_key(namespace, job_id)])


@router.get("/v1/job/{job_id:path}/summary")
async def job_summary(
    job_id: str, request: Request, blocking: BlockingDep, namespace: str = "default"
) -> Response:
    def fn() -> Any:
        job = blocking.reads.job(namespace, job_id)
        return None if job is None else blocking.reads.job_summaries(namespace, [job])[job.id]

    return await blocking.read(request, fn, [job_key(namespace, job_id), children_key(namespace, job_id)])


@router.delete("/v1/job/{job_id:path}")
async def deregister(
    job_id: str, commands: CommandsDep, namespace: str = "default", purge: bool = False
) -> dict[str, Any]:
    change, positions = await commands.run(
        lambda reads: jobs.deregister(reads.job(namespace, job_id), purge, time.time_ns())
    )
    index = positions[-1]
    return {"EvalID": change.eval_ids[0] if change.evals else "", "EvalCreateIndex": index if change.evals else 0,
            "JobModifyIndex": positions[0], "Index": index}  # fmt: skip


@router.put("/v1/job/{job_id:path}/evaluate")
@router.post("/v1/job/{job_id:path}/evaluate")
async def evaluate(job_id: str, commands: CommandsDep, namespace: str = "default") -> dict[str, Any]:
    change, positions = await commands.run(
        lambda reads: jobs.evaluate(reads.job(namespace, job_id), time.time_ns())
    )
    assert change.job is not None
    index = positions[-1]
    return {"EvalID": change.eval_ids[0], "EvalCreateIndex": index, "JobModifyIndex": change.job.modify_index,
            "Index": index}  # fmt: skip


@router.put("/v1/job/{job_id:path}/plan")
@router.post("/v1/job/{job_id:path}/plan")
async def plan(job_id: str, request: Request, body: JobPlanRequest, reads: ReadsDep) -> dict[str, Any]:
    submitted = in_namespace(request, body.job, body.namespace)
    if submitted.id != job_id:
        raise ApiError(400, "Job ID does not match name")

    return await asyncio.to_thread(dry_run, reads, submitted, body)


def dry_run(reads: Reads, submitted: Job, body: JobPlanRequest) -> dict[str, Any]:
    """Nomad's job plan: what registering `submitted` would do, scheduled against a snapshot,
    nothing written (raises CommandError as a register would). The console's Plan too."""
    job = jobs.prepare(submitted, reads)
    # Admitted as a register would be (Nomad's plan runs the admission hooks too).
    warnings = Admission(*reads.admission(job.node_pool)).check(job)
    state = load_snapshot(reads.store)
    existing, res = jobs.plan(state, job, time.time_ns())
    return {
        "Annotations": {"DesiredTGUpdates": as_json(res.plan.annotations)},
        "FailedTGAllocs": as_json(res.eval.failed_tg_allocs) or None,
        "JobModifyIndex": existing.job_modify_index if existing else 0,
        "CreatedEvals": as_json(res.create_evals),
        "Diff": plan_diff(existing, job, res.plan.annotations) if body.diff else None,
        "Warnings": body.warnings_with(warnings),
        "Index": state.index,
    }
