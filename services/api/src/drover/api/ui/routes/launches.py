"""The job page's actions that register a job: revert to an earlier version (as /v1/job/:id/revert,
with EnforcePriorVersion), dispatch a parameterized job (/ui/jobs/<ref>/dispatch, a form from
its `parameterized` block, as /v1/job/:id/dispatch) and force a periodic launch (as
/v1/job/:id/periodic/force); each goes to the job it made."""

from __future__ import annotations

import asyncio
import base64
import time

from fastapi import APIRouter, Request, Response

from drover.api.deps import CommandsDep, ReadsDep
from drover.api.errors import status_of
from drover.api.ui import access
from drover.api.ui.access import MayDispatchJob, MaySubmitJob
from drover.api.ui.csrf import CsrfChecked
from drover.api.ui.forms import fields
from drover.api.ui.render import denied, done, job_ref, not_found, split_ref, view
from drover.control.commands import dispatch, jobversions, periodic
from drover.control.commands.dispatch import DispatchChange, DispatchRequest
from drover.control.commands.jobs import JobChange
from drover.control.commands.operator import Admission
from drover.control.errors import CommandError
from drover.model import Job
from drover.runtime.store.queries import Reads

router = APIRouter()
META_FIELD = "meta."


def _job_url(ref: str) -> str:
    return "/ui/jobs/" + ref.lstrip("/")


@router.post("/ui/job/revert/{ref:path}", include_in_schema=False)
async def revert(
    ref: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MaySubmitJob
) -> Response:
    """The version registered again as the job's next, only if the job is still at the
    version the page showed (`enforce_prior_version`)."""
    ns, job_id = split_ref(ref)
    form = await fields(request)
    version, prior = form.get("version", ""), form.get("enforce_prior_version", "")
    if not all(v.isascii() and v.isdigit() for v in (version, prior)):
        return done(request, _job_url(ref), "Revert needs a version and the job's current version", "error")

    def decide(reads: Reads) -> JobChange:
        target = reads.job_version(ns, job_id, int(version)) or reads.job(ns, job_id)
        admission = Admission(*reads.admission(target.node_pool)) if target is not None else None
        return jobversions.revert(
            reads, ns, job_id, int(version), int(prior), time.time_ns(), admission=admission
        )

    try:
        change, _ = await commands.run(decide, span="job.revert", what=f"job {job_id} reverted")
    except CommandError as e:
        return done(request, _job_url(ref), e.message, "error")
    new = change.job.version if change.job is not None else "?"
    return done(request, _job_url(ref), f"Job {job_id} reverted to version {version} (now version {new})")


@router.post("/ui/job/periodic-force/{ref:path}", include_in_schema=False)
async def force_launch(
    ref: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MaySubmitJob
) -> Response:
    ns, job_id = split_ref(ref)
    decide = lambda reads: periodic.force(reads, ns, job_id, time.time_ns())  # noqa: E731
    try:
        change, _ = await commands.run(decide, span="job.periodic.force")
    except CommandError as e:
        return done(request, _job_url(ref), e.message, "error")
    child = change.job.id if change.job is not None else ""
    return done(request, _job_url(job_ref(ns, child) if child else ref), f"Launched {child}")


# ---- dispatch -------------------------------------------------------------------------------


def _dispatch_form(request: Request, job: Job, ref: str, status: int = 200, **ctx: object) -> Response:
    rules = job.parameterized_job
    assert rules is not None
    ctx = {"problems": [], "payload": "", "meta": {}, **ctx}
    return view(
        request, "dispatch.html", status, title=f"Dispatch {job.id}", job=job, ref=ref, rules=rules, **ctx
    )


@router.get("/ui/jobs/{ref:path}/dispatch", include_in_schema=False)
async def dispatch_page(ref: str, request: Request, reads: ReadsDep) -> Response:
    ns, job_id = split_ref(ref)
    if not access.may(request, access.READ_JOB, ns):
        return denied(request, f"Your ACL token may not read the jobs of namespace {ns}.")
    job = await asyncio.to_thread(reads.job, ns, job_id)
    if job is None or job.parameterized_job is None or job.parent_id:
        return not_found(request)
    return _dispatch_form(request, job, ref)


@router.post("/ui/job/dispatch/{ref:path}", include_in_schema=False)
async def dispatch_job(
    ref: str, request: Request, reads: ReadsDep, commands: CommandsDep, _c: CsrfChecked, _a: MayDispatchJob
) -> Response:
    """A child dispatched with the payload (the text, sent as Nomad's base64) and the meta
    filled in (an empty optional one left out), then its page."""
    ns, job_id = split_ref(ref)
    form = await fields(request)
    payload = form.get("payload", "").replace("\r\n", "\n")
    meta = {k.removeprefix(META_FIELD): v for k, v in form.items() if k.startswith(META_FIELD) and v}
    req = DispatchRequest(payload=base64.b64encode(payload.encode()).decode() if payload else "", meta=meta)

    def decide(reads: Reads) -> DispatchChange:
        admission = Admission(reads.scheduler_config())  # the console has no management token
        return dispatch.dispatch(reads.job(ns, job_id), req, None, 0, time.time_ns(), admission=admission)

    try:
        change, _ = await commands.run(decide, span="job.dispatch", what=f"job {job_id} dispatched")
    except CommandError as e:
        job = await asyncio.to_thread(reads.job, ns, job_id)
        if job is None or job.parameterized_job is None:
            return not_found(request)
        problems = [line.strip() for line in e.message.splitlines() if line.strip()]
        return _dispatch_form(request, job, ref, status_of(e), problems=problems, payload=payload, meta=meta)
    child = change.child
    assert child is not None
    return done(request, _job_url(job_ref(ns, child.id)), f"Dispatched {child.id}")
