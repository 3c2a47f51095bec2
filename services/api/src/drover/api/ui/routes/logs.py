"""A task's logs in the console: /ui/allocations/<id>/logs (the tail of one task's stdout or
stderr, followed live, filtered, downloadable whole) and /ui/jobs/<id>@<namespace>/logs (one
merged tail over every running alloc of the job). The bytes come from the agent holding the
alloc, as /v1/client/fs/logs forwards them; reading them is Nomad's `read-logs` capability.

The page renders the tail on the server (what a page without script shows, and where an
agent's refusal is said plainly); static/logs.js then follows the log over the page's own
event stream (drover.api.ui.logfollow), which starts with the same tail and replaces it."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, StreamingResponse

from drover.api.aclresolve import Identity
from drover.api.deps import ReadsDep
from drover.api.errors import ApiError
from drover.api.forward import ClientForwarder
from drover.api.ui import logfollow
from drover.api.ui.access import READ_LOGS, allows, may
from drover.api.ui.logfollow import Merged, Source, alloc_stream, followable, running, sse
from drover.api.ui.logtail import MAX_PATTERN, LineFilter, TooSlow
from drover.api.ui.render import ENV, _finish, base_context, job_ref, not_found, split_ref
from drover.api.ui.session import while_signed_in
from drover.control.client.logs import LOG_TYPES, LogsQuery, parse_bool
from drover.model.alloc import Allocation
from drover.model.job import Job
from drover.runtime.store.queries import Reads

router = APIRouter()

# Bytes of a log the page opens with; with a filter, more of it is searched for matches.
TAIL = 64 * 1024
FILTERED_TAIL = 1024 * 1024
# Bytes of each alloc's log a job's merged tail opens with.
JOB_TAIL = 4 * 1024
# Lines a page keeps (the server's tail, and logs.js as lines stream in).
MAX_LINES = 2000
STREAM_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


def _forwarder(request: Request) -> ClientForwarder:
    forwarder: ClientForwarder = request.app.state.client_forwarder
    return forwarder


class Refused(Exception):
    """What the page says instead of the log, with its status."""

    def __init__(self, status: int, text: str, missing: bool = False) -> None:
        super().__init__(text)
        # `missing`: the page's object (the alloc, the job) is not there - the not-found page.
        self.status, self.text, self.missing = status, text, missing


@dataclass(frozen=True)
class View:
    """The query's task, log type and filter, and every problem with them (a 400: a page says
    it above its form, to be put right there; a stream or a download is refused)."""

    task: str
    log_type: str
    keep: LineFilter
    problem: str = ""

    def check(self) -> View:
        if self.problem:
            raise Refused(400, self.problem)
        return self

    def query(self, **more: str) -> dict[str, str]:
        return {**more, "task": self.task, "type": self.log_type, "q": self.keep.text,
                "regex": "1" if self.keep.is_regex else ""}  # fmt: skip


def _view(request: Request) -> View:
    params = request.query_params
    log_type = params.get("type") or "stdout"
    problems = [] if log_type in LOG_TYPES else [f"type must be stdout or stderr, not {log_type!r}"]
    text, is_regex = params.get("q", ""), bool(parse_bool(params.get("regex", "") or "false"))
    keep, why = LineFilter.parse(text, is_regex)
    if keep is None:
        problems.append(why)
        keep = LineFilter(text[:MAX_PATTERN], is_regex)  # shown in the form, never applied
    return View(
        params.get("task", ""), log_type if log_type in LOG_TYPES else "stdout", keep, "; ".join(problems)
    )


def _tasks(reads: Reads, alloc: Allocation) -> list[str]:
    """The alloc's tasks: those it reported states for, else its group's in its job version."""
    if alloc.task_states:
        return sorted(alloc.task_states)
    job = reads.job_version(alloc.namespace, alloc.job_id, alloc.job_version)
    group = job.lookup_task_group(alloc.task_group) if job is not None else None
    return [t.name for t in group.tasks] if group is not None else []


async def _alloc(request: Request, reads: Reads, alloc_id: str) -> tuple[Allocation, list[str]]:
    """The alloc and its tasks; 404 when unknown, 403 when the token may not read its logs."""
    alloc = await asyncio.to_thread(reads.alloc, alloc_id)
    if alloc is None:
        raise Refused(404, f"alloc not found: {alloc_id}", missing=True)
    if not may(request, READ_LOGS, alloc.namespace):
        raise Refused(
            403, f"Permission denied: reading logs needs {READ_LOGS} in namespace {alloc.namespace}"
        )
    return alloc, await asyncio.to_thread(_tasks, reads, alloc)


def _task(tasks: list[str], wanted: str) -> str:
    if not wanted:
        if not tasks:
            raise Refused(404, "the allocation has no tasks")
        return tasks[0]
    if wanted not in tasks:
        raise Refused(404, f"the allocation has no task {wanted!r} (its tasks: {', '.join(tasks) or 'none'})")
    return wanted


def _html(request: Request, template: str, ctx: dict[str, Any], status: int = 200) -> Response:
    html = ENV.get_template(template).render({**base_context(request), "index": 0, **ctx})
    return _finish(request, HTMLResponse(html, status_code=status))


def _refused(request: Request, e: Refused) -> Response:
    if e.missing:
        return not_found(request)
    return _html(request, "problem.html", {"title": "Logs", "problem": e.text}, e.status)


def _qs(**params: str) -> str:
    return urlencode({k: v for k, v in params.items() if v})


async def _tail(
    request: Request, reads: Reads, source: Source, log_type: str, keep: LineFilter
) -> tuple[list[str], str]:
    """The log's last lines (at most MAX_LINES, filtered), or what kept them from being read."""
    tail = FILTERED_TAIL if keep.text else TAIL
    lines: list[str] = []
    try:
        batches = await logfollow.read(_forwarder(request), reads, source, log_type, False, tail)
        async with contextlib.aclosing(batches):
            async for batch in batches:
                lines += keep(batch)
                del lines[:-MAX_LINES]
    except ApiError as e:
        return [], e.message
    except TooSlow as e:
        return [], str(e)
    return lines, ""


@router.get("/ui/allocations/{alloc_id}/logs", include_in_schema=False)
async def alloc_logs(alloc_id: str, request: Request, reads: ReadsDep) -> Response:
    try:
        alloc, tasks = await _alloc(request, reads, alloc_id)
        view = _view(request)
        task = _task(tasks, view.task)
    except Refused as e:
        return _refused(request, e)
    log_type, keep = view.log_type, view.keep
    lines: list[str] = []
    problem = view.problem
    if not problem:
        lines, problem = await _tail(request, reads, Source(alloc.id, task), log_type, keep)
    query = {**view.query(), "task": task}
    ctx = {
        "title": f"Logs of {task} in allocation {alloc.id[:8]}", "mode": "alloc", "alloc": alloc,
        "tasks": tasks, "task": task, "log_type": log_type, "keep": keep, "lines": lines,
        "problem": problem, "max_lines": MAX_LINES,
        "stream_url": f"/ui/allocations/{alloc.id}/logs/stream?{_qs(**query)}",
        "download_url": f"/ui/allocations/{alloc.id}/logs/download?{_qs(task=task, type=log_type)}",
        "type_url": lambda t: f"/ui/allocations/{alloc.id}/logs?{_qs(**{**query, 'type': t})}",
    }  # fmt: skip
    return _html(request, "logs.html", ctx, 400 if view.problem else 200)


@router.get("/ui/allocations/{alloc_id}/logs/stream", include_in_schema=False)
async def alloc_logs_stream(alloc_id: str, request: Request, reads: ReadsDep) -> Response:
    """The page's live log: server-sent events (drover.api.ui.logfollow.alloc_stream); a
    refusal is a `problem` event, which the page shows."""
    try:
        alloc, tasks = await _alloc(request, reads, alloc_id)
        view = _view(request).check()
        task = _task(tasks, view.task)
    except Refused as e:
        return StreamingResponse(iter([sse("problem", e.text)]), media_type="text/event-stream")
    follow = parse_bool(request.query_params.get("follow", "") or "true") is not False
    tail = FILTERED_TAIL if view.keep.text else TAIL
    source = Source(alloc.id, task)
    body = alloc_stream(_forwarder(request), reads, source, view.log_type, follow, tail, view.keep)
    body = while_signed_in(request, body, _reads_logs(alloc.namespace))
    return StreamingResponse(body, media_type="text/event-stream", headers=STREAM_HEADERS)


@router.get("/ui/allocations/{alloc_id}/logs/download", include_in_schema=False)
async def alloc_logs_download(alloc_id: str, request: Request, reads: ReadsDep) -> Response:
    """The whole log (every rotated file the agent still has), as a file to save."""
    try:
        alloc, tasks = await _alloc(request, reads, alloc_id)
        log_type = _view(request).check().log_type
        task = _task(tasks, request.query_params.get("task", ""))
        forwarder = _forwarder(request)
        address = await forwarder.node_address(reads, alloc.id)
        query = LogsQuery(task, log_type, plain=True).params()
        body = await forwarder.stream(address, f"/v1/client/fs/logs/{alloc.id}", query, follow=False)
    except Refused as e:
        return _refused(request, e)
    except ApiError as e:
        return _html(request, "problem.html", {"title": "Logs", "problem": e.message}, e.status_code)
    # A header is latin-1: the name saved is the task's with anything else than [\w.-] as `_`.
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{alloc.id[:8]}-{task}.{log_type}.log")
    headers = {"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"}
    return StreamingResponse(body, media_type="text/plain; charset=utf-8", headers=headers)


# ---- a job's merged tail --------------------------------------------------------------------


async def _job(request: Request, reads: Reads, ref: str) -> tuple[Job, str, View]:
    """The job, and the query's group, task, log type and filter; 404 for an unknown job (or a
    group or task it does not have), 403 when the token may not read its logs."""
    namespace, job_id = split_ref(ref)
    # Asked first: whether a job is there is not told to a token that may not read its logs.
    if not may(request, READ_LOGS, namespace):
        raise Refused(403, f"Permission denied: reading logs needs {READ_LOGS} in namespace {namespace}")
    job = await asyncio.to_thread(reads.job, namespace, job_id)
    if job is None:
        raise Refused(404, f"job not found: {job_id}", missing=True)
    view, group = _view(request), request.query_params.get("group", "")
    if group and job.lookup_task_group(group) is None:
        raise Refused(404, f"job {job_id} has no group {group!r}")
    if view.task and view.task not in _job_tasks(job, group):
        where = f" in group {group!r}" if group else ""
        raise Refused(404, f"job {job_id} has no task {view.task!r}{where}")
    return job, group, view


def _reads_logs(namespace: str) -> Callable[[Identity], bool]:
    """Whether a token (as it is now) may still read the logs of `namespace`: a followed log
    stops when it may not (drover.api.ui.session.while_signed_in)."""
    return lambda who: allows(who.acl, READ_LOGS, namespace)


def _job_tasks(job: Job, group: str) -> list[str]:
    return sorted({t.name for g in job.task_groups if group in ("", g.name) for t in g.tasks})


def _job_url(job: Job) -> str:
    return "/ui/jobs/" + quote(job_ref(job.namespace, job.id), safe="@/")


@router.get("/ui/jobs/{ref:path}/logs", include_in_schema=False)
async def job_logs(ref: str, request: Request, reads: ReadsDep) -> Response:
    try:
        job, group, view = await _job(request, reads, ref)
    except Refused as e:
        return _refused(request, e)
    allocs = await asyncio.to_thread(running, reads, job.namespace, job.id)
    url = _job_url(job) + "/logs"
    query = view.query(group=group)
    ctx = {
        "title": f"Logs of job {job.id}", "mode": "job", "job": job, "group": group,
        "groups": [g.name for g in job.task_groups], "tasks": _job_tasks(job, group), "task": view.task,
        "log_type": view.log_type, "keep": view.keep, "lines": [], "problem": view.problem,
        "running": [a for a in allocs if followable(a, group)], "max_lines": MAX_LINES,
        "stream_url": f"{url}/stream?{_qs(**query)}",
        "type_url": lambda t: f"{url}?{_qs(**{**query, 'type': t})}",
    }  # fmt: skip
    return _html(request, "logs.html", ctx, 400 if view.problem else 200)


@router.get("/ui/jobs/{ref:path}/logs/stream", include_in_schema=False)
async def job_logs_stream(ref: str, request: Request, reads: ReadsDep) -> Response:
    """The merged tail's events: `lines` of [label, line] pairs, a `notice` as each alloc's
    log is joined or ends."""
    try:
        job, group, view = await _job(request, reads, ref)
        view.check()
    except Refused as e:
        return StreamingResponse(iter([sse("problem", e.text)]), media_type="text/event-stream")
    merged = Merged(_forwarder(request), reads, job.namespace, job.id, group, view.task, view.log_type,
                    JOB_TAIL, view.keep)  # fmt: skip
    body = while_signed_in(request, merged.events(), _reads_logs(job.namespace))
    return StreamingResponse(body, media_type="text/event-stream", headers=STREAM_HEADERS)
