"""/ui/run and /ui/jobs/<id>@<namespace>/edit: the job editor (HCL or JSON). Plan parses the
text as /v1/jobs/parse does and plans it as /v1/job/:id/plan does, with the diff; Run registers
what was planned with the plan's JobModifyIndex as EnforceIndex (Nomad's `job run
-check-index`), so a change made to the job meanwhile is a conflict, shown with a fresh plan,
never overwritten. Drover keeps no submitted source (Nomad's job submission): editing starts
from the job's JSON."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import CommandsDep, ReadsDep
from drover.api.errors import ApiError, status_of
from drover.api.routes.jobs import dry_run, registering
from drover.api.ui import access
from drover.api.ui.csrf import CsrfChecked
from drover.api.ui.forms import fields
from drover.api.ui.jobtext import FORMATS, JSON, Problem, Spec, editable, read
from drover.api.ui.render import denied, done, job_ref, not_found, split_ref, view
from drover.control.errors import CommandError
from drover.runtime.store.queries import Reads

router = APIRouter()


def _namespaces(reads: Reads) -> list[str]:
    return [n.name for n in reads.namespaces()]


def _may_submit(request: Request, namespace: str) -> None:
    # Asked of the namespace the job goes to, which only the posted spec names.
    if not access.may(request, access.SUBMIT_JOB, namespace):
        raise ApiError(403, "Permission denied")


def _htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


async def _editor(request: Request, reads: Reads, spec: Spec, status: int = 200, **ctx: Any) -> Response:
    """The editor page, with what a plan or run answered (`ctx`) below it; to htmx, only that."""
    ctx = {"problems": [], "result": None, "refused": "", "job": None, **ctx}
    if _htmx(request):
        return view(request, "fragments/run_plan.html", status, spec=spec, **ctx)
    editing = ctx.pop("editing", None)
    title = f"Edit job {editing}" if editing else "Run job"
    # The namespaces the token may submit to (every one, with ACLs off).
    namespaces = [
        n for n in await asyncio.to_thread(_namespaces, reads) if access.may(request, access.SUBMIT_JOB, n)
    ]
    return view(request, "run.html", status, title=title, spec=spec, namespaces=namespaces, formats=FORMATS,
                editing=editing, **ctx)  # fmt: skip


@router.get("/ui/run", include_in_schema=False)
async def run_page(request: Request, reads: ReadsDep, namespace: str = "") -> Response:
    return await _editor(request, reads, Spec("", namespace=namespace))


@router.get("/ui/jobs/{ref:path}/edit", include_in_schema=False)
async def edit_page(ref: str, request: Request, reads: ReadsDep) -> Response:
    ns, job_id = split_ref(ref)
    if not access.may(request, access.READ_JOB, ns):
        return denied(request, f"Your ACL token may not read the jobs of namespace {ns}.")
    job = await asyncio.to_thread(reads.job, ns, job_id)
    if job is None:
        return not_found(request)
    return await _editor(request, reads, Spec(editable(job), JSON, "", ns), editing=job_ref(ns, job_id))


async def _spec(request: Request) -> Spec:
    form = await fields(request)
    # A browser posts a textarea's lines ending in CRLF.
    text, variables = (form.get(k, "").replace("\r\n", "\n") for k in ("spec", "variables"))
    return Spec(text, form.get("format", ""), variables, form.get("namespace", ""))


async def _plan(request: Request, reads: Reads, spec: Spec, refused: str = "", status: int = 200) -> Response:
    body, problems = read(spec)
    if body is None:
        return await _editor(request, reads, spec, 400, problems=problems, refused=refused)
    _may_submit(request, body.job.namespace)
    try:
        result = await asyncio.to_thread(dry_run, reads, body.job, body)
    except CommandError as e:
        found = [Problem(line.strip()) for line in e.message.splitlines() if line.strip()]
        return await _editor(request, reads, spec, status_of(e), problems=found, refused=refused)
    return await _editor(request, reads, spec, status, result=result, job=body.job, refused=refused)


@router.post("/ui/run/plan", include_in_schema=False)
async def plan(request: Request, reads: ReadsDep, _c: CsrfChecked) -> Response:
    return await _plan(request, reads, await _spec(request))


@router.post("/ui/run", include_in_schema=False)
async def run(request: Request, reads: ReadsDep, commands: CommandsDep, _c: CsrfChecked) -> Response:
    """Register the planned spec, only if the job is still at the plan's JobModifyIndex."""
    spec = await _spec(request)
    index = (await fields(request)).get("job_modify_index", "")
    if not index.isascii() or not index.isdigit():
        return await _editor(request, reads, spec, 400, problems=[Problem("Plan the job before running it")])
    body, problems = read(spec)
    if body is None:
        return await _editor(request, reads, spec, 400, problems=problems)
    _may_submit(request, body.job.namespace)
    decide = registering(body.job, int(index), management=False)  # the console has no management token
    try:
        change, _ = await commands.run(decide, span="job.register", what=f"job {body.job.id} registered")
    except CommandError as e:
        # Planned again against the job as it is now: the refusal above what a run would now do.
        return await _plan(request, reads, spec, refused=e.message, status=status_of(e))
    job = change.job
    assert job is not None
    return _go(
        request,
        "/ui/jobs/" + job_ref(job.namespace, job.id),
        f"Job {job.id} registered, version {job.version}",
    )


def _go(request: Request, to: str, text: str) -> Response:
    """Post/redirect/get with the flash; htmx is told to go there (HX-Redirect) rather than
    follow the redirect into its target."""
    response = done(request, to, text)
    if _htmx(request):
        response.status_code = 200
        del response.headers["location"]
        response.headers["HX-Redirect"] = to
    return response
