"""/ui/jobs (the list, filtered and paged on the server) and /ui/jobs/<id>@<namespace> (a
job: its groups, deployment, allocs, evals and versions), with the job's actions - stop, start,
scale, promote and fail its deployment - each running the command its /v1 route runs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import CommandsDep, ReadsDep
from drover.api.ui import access, timeline
from drover.api.ui.access import MayDeploy, MayScaleJob, MaySubmitJob
from drover.api.ui.csrf import CsrfChecked
from drover.api.ui.forms import fields
from drover.api.ui.placement import judge
from drover.api.ui.render import Context, Fragment, act, denied, done, page, split_ref
from drover.api.ui.routes import jobrestart
from drover.api.views import as_json
from drover.control.change import Change
from drover.control.commands import deployments, jobs, scaling
from drover.control.commands.operator import Admission
from drover.control.diff.job import version_diffs
from drover.control.errors import NotFound
from drover.filter import Filter, FilterError
from drover.model import Job
from drover.model.events import PlanApplied
from drover.model.job import JOB_STATUS_DEAD, JOB_STATUS_PENDING, JOB_STATUS_RUNNING
from drover.runtime.store.listreads import Page
from drover.runtime.store.queries import Reads

router = APIRouter()

PER_PAGE = 25
VERSIONS = 10
# How many jobs a filtered page reads at a time.
FILTER_BATCH = 200
STATUSES = (JOB_STATUS_PENDING, JOB_STATUS_RUNNING, JOB_STATUS_DEAD)
TYPES = ("service", "batch", "system", "sysbatch")


# ---- the list -------------------------------------------------------------------------------


def _jobs(reads: Reads, args: Mapping[str, Any]) -> Context:
    f: Filter | None = args["bexpr"]
    if args["filter_problem"]:
        found: Page[Job] = Page([])
    elif f is None:
        found = reads.job_page(
            args["within"], status=args["status"], type_=args["type"], search=args["q"],
            after=args["after"], before=args["before"], limit=PER_PAGE,
        )  # fmt: skip
    else:
        try:
            found = _filtered_page(reads, args, f)
        except FilterError as e:
            return {"jobs": Page([]), "summaries": {}, "filter_problem": str(e)}
    return {"jobs": found, "summaries": reads.summaries_by_job(found.items)}


def _filtered_page(reads: Reads, args: Mapping[str, Any], f: Filter) -> Page[Job]:
    """A page of the jobs that pass a `filter` expression (Nomad's, as /v1/jobs?filter= takes
    it): the list read in batches from the page's token on until a page passes."""
    backwards = bool(args["before"]) and not args["after"]
    cursor = args["after"] or args["before"]
    kept: list[Job] = []
    while len(kept) <= PER_PAGE:
        batch = reads.job_page(
            args["within"], status=args["status"], type_=args["type"], search=args["q"],
            limit=FILTER_BATCH, **{"before" if backwards else "after": cursor},
        )  # fmt: skip
        walked = batch.items[::-1] if backwards else batch.items
        kept += [j for j in walked if f.matches(as_json(j))]
        if not walked or not (batch.before if backwards else batch.after):
            break
        cursor = f"{walked[-1].namespace}/{walked[-1].id}"
    more = len(kept) > PER_PAGE
    items = kept[:PER_PAGE]
    if not items:
        return Page([])
    if backwards:
        items.reverse()
    first, last = (f"{j.namespace}/{j.id}" for j in (items[0], items[-1]))
    if backwards:
        return Page(items, last, first if more else "")
    return Page(items, last if more else "", first if args["after"] else "")


def _list_topics(ctx: Context) -> list[str]:
    # Any job may join the page; the rows' statuses and counts move with their allocs and evals.
    ids = [j.id for j in ctx["jobs"].items]
    return ["Job:*", *(f"Allocation:{i}" for i in ids), *(f"Evaluation:{i}" for i in ids)]


LIST = [Fragment("jobs", "fragments/jobs.html", _jobs, _list_topics)]


@router.get("/ui/jobs", include_in_schema=False)
async def job_list(
    request: Request, reads: ReadsDep, namespace: str = "*", status: str = "", type: str = "",
    q: str = "", after: str = "", before: str = "", filter: str = "",
) -> Response:  # fmt: skip
    """`filter`: a Nomad filter expression over the job's JSON; one that does not parse is
    shown with its problem above an empty list."""
    bexpr, problem = None, ""
    if filter.strip():
        try:
            bexpr = Filter.parse(filter)
        except FilterError as e:
            problem = str(e)
    namespace = namespace or "*"
    # The filter's choices are for the page, not its live fragment; with ACLs, the scope needs them.
    wanted = "fragment" not in request.query_params or access.acl_enabled(request)
    names = [n.name for n in await asyncio.to_thread(reads.namespaces)] if wanted else []
    readable = access.readable(request, names, access.LIST_JOBS)  # as /v1/jobs lists them
    if readable is not None and namespace != "*" and namespace not in readable:
        return denied(request, f"Your ACL token may not read the jobs of namespace {namespace}.")
    # With ACLs on, the namespaces the token may read: those the list shows, and offers.
    within = namespace if namespace != "*" or readable is None else readable
    args = {"namespace": namespace, "within": within, "status": status if status in STATUSES else "",
            "type": type if type in TYPES else "", "q": q.strip(), "after": after, "before": before,
            "filter": filter.strip(), "bexpr": bexpr, "filter_problem": problem}  # fmt: skip
    return await page(request, reads, "jobs.html", LIST, args, title="Jobs", statuses=STATUSES, types=TYPES,
                      namespaces=names if readable is None else list(readable), vary=repr(within))  # fmt: skip


# ---- a job ----------------------------------------------------------------------------------


def _summary(reads: Reads, args: Mapping[str, Any]) -> Context | None:
    job = reads.job_with_status(args["ns"], args["job_id"])
    if job is None:
        return None
    summary = reads.job_summaries(job.namespace, [job])[job.id]
    return {"job": job, "summary": summary}


def _deployment(reads: Reads, args: Mapping[str, Any]) -> Context:
    deps = reads.deployments(args["ns"], args["job_id"])
    return {"deployment": deps[0] if deps else None}


def _allocations(reads: Reads, args: Mapping[str, Any]) -> Context:
    allocs = reads.alloc_page(namespace=args["ns"], job_id=args["job_id"], status=args["alloc_status"],
                              after=args["after"], before=args["before"], limit=PER_PAGE)  # fmt: skip
    return {"allocs": allocs}


def _evaluations(reads: Reads, args: Mapping[str, Any]) -> Context:
    return {"evals": reads.eval_page(namespace=args["ns"], job_id=args["job_id"], limit=10).items}


def _failures(reads: Reads, args: Mapping[str, Any]) -> Context:
    """The placement failures of the job's latest evaluation that had some (a blocked eval
    waits with them until capacity frees up)."""
    evals = reads.eval_page(namespace=args["ns"], job_id=args["job_id"], limit=10).items
    failed = next((e for e in evals if e.failed_tg_allocs), None)
    return {"failed_eval": failed}


def _why(reads: Reads, args: Mapping[str, Any]) -> Context | None:
    """Every client judged for one group (`?group=`) of the job as it is, and with what the live
    allocs use on it (a blocked group waits for one with room)."""
    job = reads.job(args["ns"], args["job_id"])
    if job is None:
        return None
    group = job.lookup_task_group(args["group"])
    if group is None:
        return {"verdicts": None, "group": args["group"]}
    nodes = reads.nodes()
    return {
        "verdicts": judge(job, group, nodes, reads.live_usage_by_node([n.id for n in nodes])),
        "group": args["group"],
    }


def _versions(reads: Reads, args: Mapping[str, Any]) -> Context:
    """The newest versions, each with its diff from the one before (Nomad's
    /v1/job/:id/versions?diffs=true; the oldest kept has none)."""
    versions = reads.job_versions(args["ns"], args["job_id"])[: VERSIONS + 1]
    diffs = version_diffs(versions) or []
    return {"versions": versions[:VERSIONS], "diffs": diffs[:VERSIONS]}


def _children(reads: Reads, args: Mapping[str, Any]) -> Context:
    """A periodic or parameterized job's newest children (each a job of its own)."""
    job = reads.job(args["ns"], args["job_id"])
    if job is None or not job.launches_children():
        return {"children": None}
    return {"children": reads.job_children(job.namespace, job.id, limit=10)}


def _children_topics(ctx: Context) -> list[str]:
    if ctx["children"] is None:
        return [f"Job:{ctx['job_id']}"]
    # A new child is a job of its own ID; a listed one's status moves with its allocs and evals.
    ids = [c.id for c in ctx["children"]]
    return ["Job:*", *(f"Allocation:{i}" for i in ids), *(f"Evaluation:{i}" for i in ids)]


TIMELINE_PAGE = 25


def _timeline(reads: Reads, args: Mapping[str, Any]) -> Context:
    """A page of what happened to the job and why (drover.api.ui.timeline), before the log
    position `?older=` (none: the newest)."""
    ns, job_id, before, n = args["ns"], args["job_id"], args["older"], TIMELINE_PAGE
    logged = reads.job_log(ns, job_id, before=before, limit=n)
    evals = reads.job_evals_created(ns, job_id, before=before, limit=n)
    allocs = reads.job_allocs_troubled(ns, job_id, before=before, limit=n)
    # A source that may have more was read down to its oldest key: the page ends at it.
    keys = ([r.position for r in logged], [e.create_index for e in evals], [a.modify_index for a in allocs])
    floor = max((min(k) - 1 for k in keys if len(k) >= n), default=0)
    node_ids = {a.node_id for a in allocs} | {
        a.node_id for r in logged if isinstance(r.event, PlanApplied) for a in r.event.allocs
    }
    names = {k: v.name for k, v in reads.nodes_by_id(sorted(node_ids)).items()} if node_ids else {}
    return {"timeline": timeline.build(logged, evals, allocs, names, before, n, floor)}


def _keyed(*topics: str) -> Any:
    return lambda ctx: [f"{t}:{ctx['job_id']}" for t in topics]


JOB = [
    Fragment("summary", "fragments/job_summary.html", _summary, _keyed("Job", "Allocation")),
    Fragment("deployment", "fragments/job_deployment.html", _deployment, _keyed("Deployment", "Job")),
    Fragment("failures", "fragments/job_failures.html", _failures, _keyed("Evaluation")),
    Fragment("why", "fragments/why.html", _why, _keyed("Node"), lazy=True),
    Fragment("allocations", "fragments/job_allocs.html", _allocations, _keyed("Allocation")),
    Fragment("evaluations", "fragments/job_evals.html", _evaluations, _keyed("Evaluation")),
    Fragment("versions", "fragments/job_versions.html", _versions, _keyed("Job")),
    Fragment("restart", "fragments/job_restart.html", jobrestart.load, jobrestart.topics),
    Fragment(
        "timeline",
        "fragments/job_timeline.html",
        _timeline,
        _keyed("Job", "Evaluation", "Allocation", "Deployment", "JobRestart"),
    ),
    Fragment("children", "fragments/job_children.html", _children, _children_topics),
]


@router.get("/ui/jobs/{ref:path}", include_in_schema=False)
async def job_page(
    ref: str, request: Request, reads: ReadsDep, alloc_status: str = "", after: str = "", before: str = "",
    group: str = "", older: str = "",
) -> Response:  # fmt: skip
    ns, job_id = split_ref(ref)
    if not access.may(request, access.READ_JOB, ns):
        return denied(request, f"Your ACL token may not read the jobs of namespace {ns}.")
    args = {"ns": ns, "job_id": job_id, "ref": ref, "alloc_status": alloc_status, "after": after,
            "before": before, "group": group,
            "older": int(older) if older.isdigit() and older.isascii() else 0}  # fmt: skip
    return await page(request, reads, "job.html", JOB, args, title=f"Job {job_id}")


# ---- actions --------------------------------------------------------------------------------


def _job_url(ref: str) -> str:
    # Only a job's page: never a redirect elsewhere from a posted field.
    return "/ui/jobs/" + ref.lstrip("/")


@router.post("/ui/job/stop/{ref:path}", include_in_schema=False)
async def stop_job(
    ref: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MaySubmitJob
) -> Response:
    ns, job_id = split_ref(ref)
    decide = lambda reads: jobs.deregister(reads.job(ns, job_id), False, time.time_ns())  # noqa: E731
    return await act(request, commands, decide, _job_url(ref), f"Job {job_id} stopped")


@router.post("/ui/job/start/{ref:path}", include_in_schema=False)
async def start_job(
    ref: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MaySubmitJob
) -> Response:
    """Nomad's UI's Start: the job registered again as it is, no longer stopped."""
    ns, job_id = split_ref(ref)

    def decide(reads: Reads) -> Change:
        current = reads.job(ns, job_id)
        if current is None:
            raise NotFound("job not found")
        job = jobs.prepare(current.model_copy(update={"stop": False}), reads)
        existing, version = reads.job_for_register(ns, job_id)
        admission = Admission(*reads.admission(job.node_pool))  # the console has no management token
        return jobs.register(job, existing, version, time.time_ns(), admission=admission)

    return await act(request, commands, decide, _job_url(ref), f"Job {job_id} started")


@router.post("/ui/job/scale/{ref:path}", include_in_schema=False)
async def scale_job(
    ref: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MayScaleJob
) -> Response:
    ns, job_id = split_ref(ref)
    form = await fields(request)
    group, count = form.get("group", ""), form.get("count", "")
    if not count.isdigit() or not count.isascii():
        return done(request, _job_url(ref), f"Invalid count {count!r}: a non-negative integer", "error")
    req = scaling.ScaleRequest(group=group, count=int(count), message="scaled from the web UI")

    def decide(reads: Reads) -> Change:
        job, version = reads.job(ns, job_id), reads.job_stream_version(ns, job_id)
        deployment = reads.active_deployment(ns, job_id)
        admission = Admission(reads.scheduler_config())
        return scaling.scale(job, job_id, ns, req, version, time.time_ns(), deployment, admission=admission)

    return await act(request, commands, decide, _job_url(ref), f"Group {group} scaled to {count}")


@router.post("/ui/deployment/promote/{deployment_id}", include_in_schema=False)
async def promote(
    deployment_id: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MayDeploy
) -> Response:
    job = (await fields(request)).get("job", "")
    decide = lambda reads: deployments.promote(reads, deployment_id, [], True, time.time_ns())  # noqa: E731
    return await act(request, commands, decide, _job_url(job), "Deployment promoted")


@router.post("/ui/deployment/fail/{deployment_id}", include_in_schema=False)
async def fail(
    deployment_id: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MayDeploy
) -> Response:
    job = (await fields(request)).get("job", "")
    decide = lambda reads: deployments.fail(reads, deployment_id, time.time_ns())  # noqa: E731
    return await act(request, commands, decide, _job_url(job), "Deployment marked as failed")
