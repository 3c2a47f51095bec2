"""The HTTP API: Nomad's paths and JSON under /v1, plus Drover's own endpoints for clients
(node registration, node status, alloc status). Writes append events; reads come from the
projections; every read carries X-Nomad-Index and supports blocking queries (?index=&wait=)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import psycopg
from fastapi import FastAPI, Request, Response
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from drover.api.heartbeats import Heartbeats
from drover.api.reads import Reads
from drover.control.deploywatch import (
    DESC_FAILED_BY_USER,
    DESC_PAUSED,
    promotion_problems,
    rollback,
    wants_rollback,
)
from drover.model import Evaluation, Job, Node
from drover.model.alloc import AllocRestartRequest
from drover.model.canonicalize import canonicalize
from drover.model.deployment import (
    DEPLOYMENT_FAILED,
    DEPLOYMENT_PAUSED,
    DEPLOYMENT_RUNNING,
    DESC_RUNNING,
    DESC_RUNNING_NEEDS_PROMOTION,
    Deployment,
)
from drover.model.evaluation import (
    TRIGGER_DEPLOYMENT_WATCHER,
    TRIGGER_JOB_DEREGISTER,
    TRIGGER_JOB_REGISTER,
    TRIGGER_NODE_UPDATE,
    TRIGGER_RECONNECT,
    TRIGGER_RETRY_FAILED_ALLOC,
    TRIGGER_SCALING,
    job_eval,
)
from drover.model.events import (
    AllocClientUpdate,
    AllocRestartRequested,
    AllocsClientUpdated,
    DeploymentUpdated,
    EvalsUpserted,
    Event,
    JobDeregistered,
    JobRegistered,
    NodeDrainUpdated,
    NodeEligibilityUpdated,
    NodeRegistered,
    NodeStatusUpdated,
)
from drover.model.job import job_spec
from drover.model.node import (
    NODE_ELIGIBLE,
    NODE_INELIGIBLE,
    NODE_STATUS_DOWN,
    NODE_STATUS_READY,
    DrainSpec,
    DrainStrategy,
)
from drover.model.validation import validate_job
from drover.runtime.settings import Settings
from drover.runtime.store import ConcurrencyError, EventStore, NewEvent, RecordedEvent, libpq_url
from drover.runtime.store.eventstore import NOTIFY_CHANNEL
from drover.runtime.telemetry import inject, tracer
from drover.runtime.watches import (
    ChangeIndex,
    alloc_key,
    category,
    deployment_key,
    eval_key,
    job_key,
    node_key,
    parse_payload,
)
from drover.scheduler import schedule

log = logging.getLogger("drover.api")
_tracer = tracer("drover.api")
MAX_WAIT = 10 * 60.0
DEFAULT_WAIT = 5 * 60.0
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)$")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def parse_wait(value: str | None) -> float:
    if value is None or value == "":
        return DEFAULT_WAIT
    m = _DURATION.match(value.strip())
    if not m:
        raise ApiError(400, "Invalid wait time")
    return min(float(m.group(1)) * _UNITS[m.group(2)], MAX_WAIT)


def _count(value: str | None, problem: str) -> int:
    """A non-negative integer query parameter; absent or empty is 0."""
    if value is None or value == "":
        return 0
    if not value.isdigit():
        raise ApiError(400, problem)
    return int(value)


def parse_index(value: str | None) -> int:
    return _count(value, "Invalid index")


def parse_per_page(value: str | None) -> int:
    return _count(value, "Invalid per_page: a non-negative integer")


@dataclass
class Paged:
    """One page of a list read, and the ID the next page starts at ("" on the last)."""

    items: list[Any]
    next_token: str = ""


def read_params(request: Request) -> tuple[int, float]:
    """A read's ?index= and ?wait=; bad query parameters (per_page too) are refused together,
    every problem listed, before the read waits."""
    problems = []
    parsed: dict[str, float] = {}
    for name, parse in (("index", parse_index), ("wait", parse_wait), ("per_page", parse_per_page)):
        try:
            parsed[name] = parse(request.query_params.get(name))
        except ApiError as e:
            problems.append(e.message)
    if problems:
        raise ApiError(400, "\n".join(problems))
    return int(parsed["index"]), parsed["wait"]


def paged(request: Request, fetch: Callable[[str, int], list[Any]]) -> Callable[[], Paged]:
    """A list read paged as Nomad's are: ?per_page= items (0 or none: all) from the item whose
    ID is ?next_token=, in ID order; the next page's token goes in X-Nomad-NextToken."""

    def read() -> Paged:
        per_page = parse_per_page(request.query_params.get("per_page"))
        token = request.query_params.get("next_token", "")
        items = fetch(token, per_page + 1 if per_page else 0)
        if per_page and len(items) > per_page:
            return Paged(items[:per_page], items[per_page].id)
        return Paged(items)

    return read


def as_json(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(by_alias=True, mode="json")
    if isinstance(obj, list):
        return [as_json(o) for o in obj]
    if isinstance(obj, dict):
        return {k: as_json(v) for k, v in obj.items()}
    return obj


def _pydantic_problems(err: ValidationError, root: str) -> list[str]:
    out = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        out.append(f"{root}.{loc}: {e['msg']}" if loc else f"{root}: {e['msg']}")
    return out


def _spec(job: Job) -> dict[str, Any]:
    return job_spec(job)


class BodyLimit:
    """413 for a request whose Content-Length is over `limit`, before its body is read. A plain
    ASGI middleware: Starlette's `@app.middleware("http")` runs every request in a task of its
    own and passes its response through a memory stream."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for name, value in scope["headers"]:
                if name == b"content-length":
                    if value.isdigit() and int(value) > self.limit:
                        response = PlainTextResponse("Request body too large", status_code=413)
                        await response(scope, receive, send)
                        return
                    break
        await self.app(scope, receive, send)


class IndexWatcher:
    """The newest log position and what changed at each, pushed by Postgres NOTIFY, for
    blocking queries: each waits on the keys of what it reads (drover.runtime.watches) and is
    woken only when one of them changes, as Nomad's wake on the state they read."""

    def __init__(self, conninfo: str, store: EventStore) -> None:
        self.conninfo = conninfo
        self.store = store
        self.changes = ChangeIndex()
        # Set when the API stops: every blocking query is answered at once.
        self.released = False
        # Futures of the waiting queries, by the keys they wait on (a category's waiters are
        # found through their keys' prefix).
        self._waiting: dict[str, set[asyncio.Future[None]]] = {}

    async def run(self) -> None:
        self.changes.forget(await asyncio.to_thread(self.store.last_position))
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    # Whatever committed while no one listened may have changed anything.
                    self._forget(await asyncio.to_thread(self.store.last_position))
                    async for note in conn.notifies():
                        self.note(*parse_payload(note.payload))
            except (psycopg.Error, OSError):
                await asyncio.sleep(0.5)

    def note(self, position: int, keys: list[str], categories: list[str]) -> None:
        """A commit at `position` changed `keys` (and every key of `categories`)."""
        self.changes.note(position, keys, categories)
        for k in keys:
            self._wake(self._waiting.get(k, ()))
        for c in categories:
            for k, futures in list(self._waiting.items()):
                if c == "*" or category(k) == c:
                    self._wake(futures)

    def _forget(self, position: int) -> None:
        self.changes.forget(position)
        self._wake_all()

    def _wake_all(self) -> None:
        for futures in list(self._waiting.values()):
            self._wake(futures)

    @staticmethod
    def _wake(futures: Iterable[asyncio.Future[None]]) -> None:
        for f in list(futures):
            if not f.done():
                f.set_result(None)

    def release(self) -> None:
        """Answer every blocking query now, and any that comes after at once: the API is
        stopping, and each would hold its stop for up to its ?wait (5 minutes at most)."""
        self.released = True
        self._wake_all()

    async def wait_changed(self, keys: list[str], index: int, timeout: float) -> None:
        """Until one of `keys` changed after `index`, `timeout` seconds passed, or the API
        stops."""
        deadline = time.monotonic() + timeout
        while not self.released and not self.changes.changed_after(keys, index):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            for k in keys:
                self._waiting.setdefault(k, set()).add(fut)
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(fut, left)
            finally:
                for k in keys:
                    waiting = self._waiting.get(k)
                    if waiting is not None:
                        waiting.discard(fut)
                        if not waiting:
                            del self._waiting[k]


def create_app(settings: Settings, store: EventStore | None = None) -> FastAPI:
    store = store or EventStore(settings.database_url, pool_size=10)
    reads = Reads(store)
    watcher = IndexWatcher(libpq_url(settings.database_url), store)
    heartbeats = Heartbeats(settings, reads)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(watcher.run())
        yield
        task.cancel()
        await heartbeats.close()
        store.close()

    app = FastAPI(title="Drover", version="0.1.0", lifespan=lifespan)
    app.state.watcher = watcher

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> Response:
        return PlainTextResponse(exc.message, status_code=exc.status)

    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)

    async def body_json(request: Request) -> Any:
        raw = await request.body()
        if len(raw) > settings.max_body_bytes:
            raise ApiError(413, "Request body too large")
        try:
            return json.loads(raw or b"null")
        except (ValueError, UnicodeDecodeError) as e:
            raise ApiError(400, f"Malformed JSON: {e}") from e

    async def blocking_read(request: Request, fn: Callable[[], Any], keys: list[str]) -> Response:
        """Run a read, after waiting (blocking query) until one of `keys` - what the read
        shows (drover.runtime.watches) - changed after ?index, or ?wait passed."""

        def read() -> tuple[int, Any]:
            # The index first: what the answer shows is at least as new as the index it carries.
            return reads.index(), fn()

        return await blocking_read_at(request, read, keys)

    async def blocking_read_at(
        request: Request, read: Callable[[], tuple[int, Any]], keys: list[str]
    ) -> Response:
        """`blocking_read` for a read that gives the index with its result."""
        index, wait = read_params(request)
        if index:
            await watcher.wait_changed(keys, index, wait)
        current, result = await asyncio.to_thread(read)
        if result is None:
            raise ApiError(404, "not found")
        headers = {"X-Nomad-Index": str(current), "X-Nomad-KnownLeader": "true", "X-Nomad-LastContact": "0"}
        if isinstance(result, Paged):
            if result.next_token:
                headers["X-Nomad-NextToken"] = result.next_token
            result = result.items
        return Response(
            content=json.dumps(None if result is NO_DEPLOYMENT else as_json(result)),
            media_type="application/json",
            headers=headers,
        )

    def traced(events: list[Event | NewEvent]) -> list[NewEvent]:
        """Events carrying the current trace context in their log metadata."""
        meta = inject()
        out = []
        for e in events:
            ne = e if isinstance(e, NewEvent) else NewEvent(e)
            out.append(NewEvent(ne.event, ne.expected_version, {**ne.metadata, **meta}))
        return out

    async def append(events: list[Event | NewEvent]) -> int:
        t0 = time.perf_counter()
        recorded = await asyncio.to_thread(store.append, traced(events))
        log.debug("appended %s at %d in %.0f ms", recorded[-1].event.type, recorded[-1].position,
                  (time.perf_counter() - t0) * 1000)  # fmt: skip
        return recorded[-1].position

    def new_eval(job: Job, trigger: str, **kw: Any) -> Evaluation:
        return job_eval(job, trigger, time.time_ns(), **kw)

    def parse_job(body: Any) -> Job:
        if not isinstance(body, dict) or not isinstance(body.get("Job"), dict):
            raise ApiError(400, 'Request must be a JSON object with a "Job" object')
        try:
            job = Job.model_validate(body["Job"])
        except ValidationError as e:
            raise ApiError(400, "Job is invalid:\n" + "\n".join(_pydantic_problems(e, "Job"))) from e
        job = canonicalize(job)
        problems = validate_job(job)
        if problems:
            raise ApiError(400, "Job is invalid:\n" + "\n".join(problems))
        return job

    def register_in_thread(job: Job) -> tuple[Evaluation, list[RecordedEvent]]:
        """Read the job as registered now, version the new one against it and append both, in
        one trip to a thread (a hop back to a busy event loop between the read and the append
        would be waited for under load), retrying if the job changed in between."""
        for _ in range(5):
            existing, stream_version = reads.job_for_register(job.namespace, job.id)
            version = 0
            if existing is not None:
                version = existing.version + (
                    1 if _spec(existing) != _spec(job.model_copy(update={"version": existing.version})) else 0
                )
            job = job.model_copy(update={"version": version, "submit_time": time.time_ns(), "stop": job.stop})
            ev = new_eval(job, TRIGGER_JOB_REGISTER)
            try:
                with _tracer.start_as_current_span(
                    "job.register", attributes={"job.id": job.id, "eval.id": ev.id}
                ):
                    events: list[Event | NewEvent] = [
                        NewEvent(JobRegistered(job=job), expected_version=stream_version),
                        EvalsUpserted(evals=[ev]),
                    ]
                    t0 = time.perf_counter()
                    recorded = store.append(traced(events))
                    log.debug("job %s registered at %d: append took %.0f ms", job.id,
                              recorded[-1].position, (time.perf_counter() - t0) * 1000)  # fmt: skip
            except ConcurrencyError:
                continue
            return ev, recorded
        raise ApiError(409, "job was modified concurrently; try again")

    async def register(job: Job) -> dict[str, Any]:
        # The thread runs in a copy of this task's context: the span is the request's child.
        ev, recorded = await asyncio.to_thread(register_in_thread, job)
        return {
            "EvalID": ev.id,
            "EvalCreateIndex": recorded[1].position,
            "JobModifyIndex": recorded[0].position,
            "Warnings": "",
            "Index": recorded[-1].position,
            "LastContact": 0,
            "KnownLeader": True,
        }

    # --- jobs ---
    @app.get("/v1/jobs")
    async def list_jobs(request: Request, prefix: str = "", namespace: str = "default") -> Response:
        read = paged(request, lambda start, limit: reads.jobs(namespace, prefix, start=start, limit=limit))

        def fn() -> Paged:
            page = read()
            return Paged([_job_stub(j) for j in page.items], page.next_token)

        # A job's Status is derived from its allocs and evals.
        return await blocking_read(request, fn, ["jobs", "allocs", "evals"])

    @app.put("/v1/jobs")
    @app.post("/v1/jobs")
    async def register_jobs(request: Request) -> dict[str, Any]:
        return await register(parse_job(await body_json(request)))

    @app.put("/v1/job/{job_id}")
    @app.post("/v1/job/{job_id}")
    async def register_job(job_id: str, request: Request) -> dict[str, Any]:
        job = parse_job(await body_json(request))
        if job.id != job_id:
            raise ApiError(400, "Job ID does not match name")
        return await register(job)

    @app.get("/v1/job/{job_id}")
    async def read_job(job_id: str, request: Request, namespace: str = "default") -> Response:
        return await blocking_read(
            request, lambda: reads.job(namespace, job_id), [job_key(namespace, job_id)]
        )

    @app.get("/v1/job/{job_id}/versions")
    async def job_versions(job_id: str, request: Request, namespace: str = "default") -> Response:
        def fn() -> Any:
            versions = reads.job_versions(namespace, job_id)
            return {"Versions": versions, "Diffs": None} if versions else None

        return await blocking_read(request, fn, [job_key(namespace, job_id)])

    @app.get("/v1/job/{job_id}/allocations")
    async def job_allocs(job_id: str, request: Request, namespace: str = "default") -> Response:
        def read() -> tuple[int, Any]:
            index, allocs = reads.job_allocs_at(namespace, job_id)
            return index, None if allocs is None else [_alloc_stub(a) for a in allocs]

        return await blocking_read_at(request, read, [job_key(namespace, job_id)])

    @app.get("/v1/job/{job_id}/evaluations")
    async def job_evals(job_id: str, request: Request, namespace: str = "default") -> Response:
        def fn() -> Any:
            if not reads.job_exists(namespace, job_id):
                return None
            return reads.evals(namespace=namespace, job_id=job_id)

        return await blocking_read(request, fn, [job_key(namespace, job_id)])

    @app.get("/v1/job/{job_id}/deployments")
    async def job_deployments(job_id: str, request: Request, namespace: str = "default") -> Response:
        def fn() -> Any:
            if not reads.job_exists(namespace, job_id):
                return None
            return reads.deployments(namespace, job_id)

        return await blocking_read(request, fn, [job_key(namespace, job_id)])

    @app.get("/v1/job/{job_id}/deployment")
    async def job_latest_deployment(job_id: str, request: Request, namespace: str = "default") -> Response:
        def fn() -> Any:
            if not reads.job_exists(namespace, job_id):
                return None
            deps = reads.deployments(namespace, job_id)
            # Nomad answers null when the job has no deployment.
            return deps[0] if deps else NO_DEPLOYMENT

        return await blocking_read(request, fn, [job_key(namespace, job_id)])

    @app.get("/v1/job/{job_id}/summary")
    async def job_summary(job_id: str, request: Request, namespace: str = "default") -> Response:
        def fn() -> Any:
            job = reads.job(namespace, job_id)
            if job is None:
                return None
            summary: dict[str, dict[str, int]] = {
                tg.name: dict.fromkeys(
                    ("Queued", "Complete", "Failed", "Running", "Starting", "Lost", "Unknown"), 0
                )
                for tg in job.task_groups
            }
            key = {"pending": "Starting", "running": "Running", "complete": "Complete", "failed": "Failed",
                   "lost": "Lost", "unknown": "Unknown"}  # fmt: skip
            for a in reads.allocs(namespace=namespace, job_id=job_id):
                if a.task_group in summary and a.client_status in key:
                    summary[a.task_group][key[a.client_status]] += 1
            return {"JobID": job.id, "Namespace": job.namespace, "Summary": summary,
                    "CreateIndex": job.create_index, "ModifyIndex": job.modify_index}  # fmt: skip

        return await blocking_read(request, fn, [job_key(namespace, job_id)])

    @app.delete("/v1/job/{job_id}")
    async def deregister(job_id: str, namespace: str = "default", purge: bool = False) -> dict[str, Any]:
        job = await asyncio.to_thread(reads.job, namespace, job_id)
        if job is None:
            raise ApiError(404, "job not found")
        ev = new_eval(job, TRIGGER_JOB_DEREGISTER)
        index = await append(
            [JobDeregistered(namespace=namespace, job_id=job_id, purge=purge), EvalsUpserted(evals=[ev])]
        )
        return {"EvalID": ev.id, "EvalCreateIndex": index, "JobModifyIndex": index, "Index": index}

    @app.post("/v1/job/{job_id}/evaluate")
    @app.put("/v1/job/{job_id}/evaluate")
    async def evaluate(job_id: str, namespace: str = "default") -> dict[str, Any]:
        job = await asyncio.to_thread(reads.job, namespace, job_id)
        if job is None:
            raise ApiError(404, "job not found")
        ev = new_eval(job, TRIGGER_JOB_REGISTER)
        index = await append([EvalsUpserted(evals=[ev])])
        return {"EvalID": ev.id, "EvalCreateIndex": index, "JobModifyIndex": job.modify_index, "Index": index}

    @app.post("/v1/job/{job_id}/scale")
    @app.put("/v1/job/{job_id}/scale")
    async def scale(job_id: str, request: Request, namespace: str = "default") -> dict[str, Any]:
        body = await body_json(request)
        job = await asyncio.to_thread(reads.job, namespace, job_id)
        if job is None:
            raise ApiError(404, "job not found")
        if not isinstance(body, dict):
            raise ApiError(400, "Request must be a JSON object")
        count, target = body.get("Count"), body.get("Target") or {}
        group = target.get("Group") if isinstance(target, dict) else None
        problems = []
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            problems.append("Count must be a non-negative integer")
        if job.lookup_task_group(str(group)) is None:
            problems.append(f"Target.Group {group!r} is not a task group of job {job_id!r}")
        if problems:
            raise ApiError(400, "\n".join(problems))
        scaled = job.model_copy(deep=True)
        tg = scaled.lookup_task_group(str(group))
        assert tg is not None
        tg.count = int(count)  # type: ignore[arg-type]
        scaled.version = job.version + 1
        ev = new_eval(scaled, TRIGGER_SCALING)
        stream_version = await asyncio.to_thread(reads.job_stream_version, namespace, job_id)
        try:
            index = await append(
                [
                    NewEvent(JobRegistered(job=scaled), expected_version=stream_version),
                    EvalsUpserted(evals=[ev]),
                ]
            )
        except ConcurrencyError as e:
            raise ApiError(409, "job was modified concurrently; try again") from e
        return {
            "EvalID": ev.id,
            "EvalCreateIndex": index,
            "JobModifyIndex": index,
            "Index": index,
            "Warnings": "",
        }

    @app.post("/v1/job/{job_id}/plan")
    @app.put("/v1/job/{job_id}/plan")
    async def plan(job_id: str, request: Request) -> dict[str, Any]:
        job = parse_job(await body_json(request))
        if job.id != job_id:
            raise ApiError(400, "Job ID does not match name")

        def dry_run() -> dict[str, Any]:
            from drover.runtime.replica import load_snapshot

            state = load_snapshot(store)
            existing = state.job(job.namespace, job.id)
            version = (
                0
                if existing is None
                else existing.version
                + (1 if _spec(existing) != _spec(job.model_copy(update={"version": existing.version})) else 0)
            )
            state.upsert_job(job.model_copy(update={"version": version}))
            ev = new_eval(job, TRIGGER_JOB_REGISTER)
            res = schedule(state, ev, time.time_ns())
            return {
                "Annotations": {"DesiredTGUpdates": as_json(res.plan.annotations)},
                "FailedTGAllocs": as_json(res.eval.failed_tg_allocs) or None,
                "JobModifyIndex": existing.job_modify_index if existing else 0,
                "CreatedEvals": as_json(res.create_evals),
                "Diff": None,
                "Warnings": "",
                "Index": state.index,
            }

        return await asyncio.to_thread(dry_run)

    # --- allocations and evaluations ---
    @app.get("/v1/allocations")
    async def list_allocs(request: Request, prefix: str = "") -> Response:
        read = paged(request, lambda start, limit: reads.allocs(prefix=prefix, start=start, limit=limit))

        def fn() -> Paged:
            page = read()
            return Paged([_alloc_stub(a) for a in page.items], page.next_token)

        return await blocking_read(request, fn, ["allocs"])

    @app.get("/v1/drover/allocs/changes")
    async def alloc_changes(request: Request, node_prefix: str = "") -> Response:
        """Allocs changed after ?index= on nodes whose ID starts with ?node_prefix= (a blocking
        query): how a process hosting many nodes (drover sim) follows their allocs at once."""
        since = parse_index(request.query_params.get("index"))
        return await blocking_read(
            request, lambda: [_alloc_stub(a) for a in reads.alloc_changes(since, node_prefix)], ["allocs"]
        )

    @app.get("/v1/allocation/{alloc_id}")
    async def read_alloc(alloc_id: str, request: Request) -> Response:
        return await blocking_read(request, lambda: reads.alloc(alloc_id), [alloc_key(alloc_id)])

    @app.put("/v1/client/allocation/{alloc_id}/restart")
    @app.post("/v1/client/allocation/{alloc_id}/restart")
    async def restart_alloc(alloc_id: str, request: Request) -> dict[str, Any]:
        """Restart an alloc's tasks in place (Nomad's alloc restart): the named task, else the
        running ones, or with AllTasks every task. Recorded in the log; the node's agent acts on
        it and reports a "Restart Signaled" task event."""
        raw = await request.body()
        body = await body_json(request) if raw.strip() else {}
        if not isinstance(body, dict):
            raise ApiError(400, "Request must be a JSON object")
        task = body.get("TaskName") or ""
        all_tasks = body.get("AllTasks", False)
        problems = []
        if not isinstance(task, str):
            problems.append("TaskName must be a string")
        if not isinstance(all_tasks, bool):
            problems.append("AllTasks must be a boolean")
        if task and all_tasks is True:
            problems.append("Task name cannot be set when restarting all tasks")
        if problems:
            raise ApiError(400, "\n".join(problems))
        alloc = await asyncio.to_thread(reads.alloc, alloc_id)
        if alloc is None:
            raise ApiError(404, "alloc not found")
        if alloc.terminal_status():
            raise ApiError(
                400, f"Alloc {alloc_id} is terminal ({alloc.desired_status}/{alloc.client_status})"
            )
        job = await asyncio.to_thread(reads.job_version, alloc.namespace, alloc.job_id, alloc.job_version)
        tg = job.lookup_task_group(alloc.task_group) if job is not None else None
        names = {t.name for t in tg.tasks} if tg is not None else set()
        if task and task not in names:
            raise ApiError(400, f'Unknown task "{task}" (alloc {alloc_id} has: {", ".join(sorted(names))})')
        if task:
            state = alloc.task_states.get(task)
            if state is None or state.state != "running":
                raise ApiError(400, f'Task "{task}" not running')
        elif not all_tasks and not any(ts.state == "running" for ts in alloc.task_states.values()):
            raise ApiError(400, "No task is running")
        req = AllocRestartRequest(
            id=str(uuid.uuid4()), task_name=task, all_tasks=all_tasks, time=time.time_ns()
        )
        index = await append([AllocRestartRequested(alloc_id=alloc_id, request=req)])
        return {"Index": index, "RestartID": req.id}

    # --- deployments ---
    @app.get("/v1/deployments")
    async def list_deployments(request: Request, prefix: str = "") -> Response:
        return await blocking_read(request, lambda: reads.all_deployments(prefix), ["deployments"])

    @app.get("/v1/deployment/{deployment_id}")
    async def read_deployment(deployment_id: str, request: Request) -> Response:
        return await blocking_read(
            request, lambda: reads.deployment(deployment_id), [deployment_key(deployment_id)]
        )

    async def deployment_update(
        deployment_id: str, make: Callable[[Deployment, Job, int], tuple[list[Event | NewEvent], Job | None]]
    ) -> dict[str, Any]:
        """Apply an operator's change to a deployment (promote, pause, fail): read it, let
        `make` decide (an ApiError if it may not), append, answer as Nomad does."""
        dep = await asyncio.to_thread(reads.deployment, deployment_id)
        if dep is None:
            raise ApiError(404, "deployment not found")
        job = await asyncio.to_thread(reads.job, dep.namespace, dep.job_id)
        if job is None:
            raise ApiError(404, "job not found")
        # In a thread: deciding may read the projections.
        events, reverted = await asyncio.to_thread(make, dep, job, time.time_ns())
        if reverted is not None:
            version = await asyncio.to_thread(reads.job_stream_version, job.namespace, job.id)
            events.insert(0, NewEvent(JobRegistered(job=reverted), expected_version=version))
        try:
            index = await append(events)
        except ConcurrencyError as e:
            raise ApiError(409, f"job changed meanwhile: {e}") from e
        eval_ids = [ev.id for e in events if isinstance(e, DeploymentUpdated) for ev in e.evals]
        return {
            "EvalID": eval_ids[0] if eval_ids else "",
            "EvalCreateIndex": index,
            "DeploymentModifyIndex": index,
            "RevertedJobVersion": reverted.version if reverted is not None else None,
            "Index": index,
        }

    @app.put("/v1/deployment/promote/{deployment_id}")
    @app.post("/v1/deployment/promote/{deployment_id}")
    async def promote_deployment(deployment_id: str, request: Request) -> dict[str, Any]:
        body = await body_json(request) if (await request.body()).strip() else {}
        if not isinstance(body, dict):
            raise ApiError(400, "Request must be a JSON object")
        groups, all_groups = body.get("Groups") or [], body.get("All", False)
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise ApiError(400, "Groups must be a list of task group names")
        if not isinstance(all_groups, bool) or (not all_groups and not groups):
            raise ApiError(400, "Promote needs All true or the Groups to promote")

        def make(dep: Deployment, job: Job, now: int) -> tuple[list[Event | NewEvent], Job | None]:
            problems = promotion_problems(dep, reads.deployment_allocs(dep), groups, all_groups)
            if problems:
                raise ApiError(400, "\n".join(problems))
            ev = new_eval(job, TRIGGER_DEPLOYMENT_WATCHER, deployment_id=dep.id)
            return [
                DeploymentUpdated(
                    deployment_id=dep.id, promote=True, promote_groups=[] if all_groups else groups,
                    status_description=DESC_RUNNING, evals=[ev], at=now,
                )
            ], None  # fmt: skip

        return await deployment_update(deployment_id, make)

    @app.put("/v1/deployment/pause/{deployment_id}")
    @app.post("/v1/deployment/pause/{deployment_id}")
    async def pause_deployment(deployment_id: str, request: Request) -> dict[str, Any]:
        body = await body_json(request)
        if not isinstance(body, dict) or not isinstance(body.get("Pause"), bool):
            raise ApiError(400, 'Request must be a JSON object with "Pause": true or false')
        pause = body["Pause"]

        def make(dep: Deployment, job: Job, now: int) -> tuple[list[Event | NewEvent], Job | None]:
            if not dep.active():
                raise ApiError(400, f"can't {'pause' if pause else 'resume'} terminal deployment")
            if pause:
                return [DeploymentUpdated(deployment_id=dep.id, status=DEPLOYMENT_PAUSED,
                                          status_description=DESC_PAUSED, at=now)], None  # fmt: skip
            desc = DESC_RUNNING_NEEDS_PROMOTION if dep.requires_promotion() else DESC_RUNNING
            ev = new_eval(job, TRIGGER_DEPLOYMENT_WATCHER, deployment_id=dep.id)
            return [DeploymentUpdated(deployment_id=dep.id, status=DEPLOYMENT_RUNNING,
                                      status_description=desc, evals=[ev], at=now)], None  # fmt: skip

        return await deployment_update(deployment_id, make)

    @app.put("/v1/deployment/fail/{deployment_id}")
    @app.post("/v1/deployment/fail/{deployment_id}")
    async def fail_deployment(deployment_id: str) -> dict[str, Any]:
        def make(dep: Deployment, job: Job, now: int) -> tuple[list[Event | NewEvent], Job | None]:
            if not dep.active():
                raise ApiError(400, "can't fail terminal deployment")
            desc, reverted = DESC_FAILED_BY_USER, None
            if wants_rollback(dep):
                versions = reads.job_versions(job.namespace, job.id)
                desc, reverted = rollback(job, versions, desc, now)
            ev = new_eval(reverted or job, TRIGGER_DEPLOYMENT_WATCHER, deployment_id=dep.id)
            return [DeploymentUpdated(deployment_id=dep.id, status=DEPLOYMENT_FAILED,
                                      status_description=desc, evals=[ev], at=now)], reverted  # fmt: skip

        return await deployment_update(deployment_id, make)

    @app.get("/v1/deployment/allocations/{deployment_id}")
    async def deployment_allocs(deployment_id: str, request: Request) -> Response:
        def fn() -> Any:
            dep = reads.deployment(deployment_id)
            if dep is None:
                return None
            return [_alloc_stub(a) for a in reads.deployment_allocs(dep)]

        return await blocking_read(request, fn, [deployment_key(deployment_id)])

    @app.get("/v1/evaluations")
    async def list_evals(request: Request, prefix: str = "") -> Response:
        return await blocking_read(
            request,
            paged(request, lambda start, limit: reads.evals(prefix=prefix, start=start, limit=limit)),
            ["evals"],
        )

    @app.get("/v1/evaluation/{eval_id}")
    async def read_eval(eval_id: str, request: Request) -> Response:
        return await blocking_read(request, lambda: reads.eval(eval_id), [eval_key(eval_id)])

    @app.get("/v1/evaluation/{eval_id}/allocations")
    async def eval_allocs(eval_id: str, request: Request) -> Response:
        def fn() -> Any:
            ev = reads.eval(eval_id)
            if ev is None:
                return None
            # An eval's allocs are its job's: found by the job's index, filtered by the eval.
            allocs = reads.allocs(namespace=ev.namespace, job_id=ev.job_id, eval_id=eval_id)
            return [_alloc_stub(a) for a in allocs]

        return await blocking_read(request, fn, [eval_key(eval_id)])

    # --- nodes ---
    @app.get("/v1/nodes")
    async def list_nodes(request: Request, prefix: str = "") -> Response:
        read = paged(request, lambda start, limit: reads.nodes(prefix, start=start, limit=limit))

        def fn() -> Paged:
            page = read()
            return Paged([_node_stub(n) for n in page.items], page.next_token)

        return await blocking_read(request, fn, ["nodes"])

    @app.get("/v1/node/{node_id}")
    async def read_node(node_id: str, request: Request) -> Response:
        return await blocking_read(request, lambda: reads.node(node_id), [node_key(node_id)])

    @app.get("/v1/node/{node_id}/allocations")
    async def node_allocs(node_id: str, request: Request) -> Response:
        def fn() -> Any:
            if reads.node(node_id) is None:
                return None
            return reads.allocs(node_id=node_id)

        return await blocking_read(request, fn, [node_key(node_id)])

    async def node_update_evals(node: Node) -> list[Evaluation]:
        """One eval per job with a live alloc on the node, one per system job whose
        datacenters and pool take it (seed 003: node-update)."""
        from drover.scheduler.feasible import node_in_job_pool

        keys = await asyncio.to_thread(reads.jobs_with_allocs_on, node.id)
        jobs = [j for ns, jid in keys if (j := await asyncio.to_thread(reads.job, ns, jid)) is not None]
        for sj in await asyncio.to_thread(reads.system_jobs):
            if node_in_job_pool(node, sj) and (sj.namespace, sj.id) not in keys:
                jobs.append(sj)
        return [new_eval(j, TRIGGER_NODE_UPDATE, node_id=node.id) for j in jobs]

    @app.post("/v1/node/{node_id}/eligibility")
    @app.put("/v1/node/{node_id}/eligibility")
    async def node_eligibility(node_id: str, request: Request) -> dict[str, Any]:
        body = await body_json(request)
        elig = body.get("Eligibility") if isinstance(body, dict) else None
        if elig not in (NODE_ELIGIBLE, NODE_INELIGIBLE):
            raise ApiError(400, 'Eligibility must be "eligible" or "ineligible"')
        node = await asyncio.to_thread(reads.node, node_id)
        if node is None:
            raise ApiError(404, "node not found")
        index = await append([NodeEligibilityUpdated(node_id=node_id, eligibility=elig)])
        return {"EvalIDs": [], "EvalCreateIndex": 0, "NodeModifyIndex": index, "Index": index}

    @app.post("/v1/node/{node_id}/drain")
    @app.put("/v1/node/{node_id}/drain")
    async def node_drain(node_id: str, request: Request) -> dict[str, Any]:
        """Start (DrainSpec) or cancel (DrainSpec null) a drain; the node drainer moves the allocs."""
        body = await body_json(request)
        if not isinstance(body, dict):
            raise ApiError(400, "Request must be a JSON object")
        spec, problems = body.get("DrainSpec"), []
        if spec is not None and not isinstance(spec, dict):
            problems.append("DrainSpec must be an object or null")
        elif spec is not None:
            deadline = spec.get("Deadline", 0)
            if isinstance(deadline, bool) or not isinstance(deadline, int):
                problems.append(
                    "DrainSpec.Deadline must be an integer (nanoseconds; -1 forces the drain now)"
                )
            if not isinstance(spec.get("IgnoreSystemJobs", False), bool):
                problems.append("DrainSpec.IgnoreSystemJobs must be true or false")
        if not isinstance(body.get("MarkEligible", False), bool):
            problems.append("MarkEligible must be true or false")
        if problems:
            raise ApiError(400, "\n".join(problems))
        node = await asyncio.to_thread(reads.node, node_id)
        if node is None:
            raise ApiError(404, "node not found")
        now = time.time_ns()
        if spec is None:
            event = NodeDrainUpdated(
                node_id=node_id,
                drain_strategy=None,
                eligibility=NODE_ELIGIBLE if body.get("MarkEligible") else "",
            )
        else:
            deadline = int(spec.get("Deadline", 0))
            strategy = DrainStrategy(
                drain_spec=DrainSpec(
                    deadline=deadline, ignore_system_jobs=bool(spec.get("IgnoreSystemJobs", False))
                ),
                force_deadline=now if deadline < 0 else (now + deadline if deadline > 0 else 0),
                started_at=now,
            )
            event = NodeDrainUpdated(node_id=node_id, drain_strategy=strategy, eligibility=NODE_INELIGIBLE)
        index = await append([event])
        return {"EvalIDs": [], "EvalCreateIndex": 0, "NodeModifyIndex": index, "Index": index}

    # --- Drover's client endpoints ---
    @app.put("/v1/drover/node/register")
    @app.post("/v1/drover/node/register")
    async def node_register(request: Request) -> dict[str, Any]:
        body = await body_json(request)
        if not isinstance(body, dict) or not isinstance(body.get("Node"), dict):
            raise ApiError(400, 'Request must be a JSON object with a "Node" object')
        try:
            node = Node.model_validate(body["Node"])
        except ValidationError as e:
            raise ApiError(400, "Node is invalid:\n" + "\n".join(_pydantic_problems(e, "Node"))) from e
        problems = []
        if not node.id:
            problems.append("Node.ID is required")
        if not node.datacenter:
            problems.append("Node.Datacenter is required")
        if min(node.capacity()) < 0:
            problems.append("Node reserves more resources than it has")
        if problems:
            raise ApiError(400, "Node is invalid:\n" + "\n".join(problems))
        evals = await node_update_evals(node) if node.ready() else []
        index = await append([NodeRegistered(node=node), *([EvalsUpserted(evals=evals)] if evals else [])])
        # Registering counts as a heartbeat: the watcher starts the node's clock when it sees the
        # registration in the log (with the longest TTL it could have been handed).
        ttl = await heartbeats.ttl()
        return {
            "NodeModifyIndex": index,
            "EvalIDs": [e.id for e in evals],
            "HeartbeatTTL": ttl,
            "Index": index,
        }

    async def beat(node_ids: list[str], ttls: list[int]) -> None:
        try:
            await heartbeats.publish(node_ids, ttls)
        except Exception as e:
            raise ApiError(503, f"heartbeat not delivered (NATS unreachable): {e}") from e

    async def heartbeat_nodes(node_ids: list[str]) -> dict[str, Any]:
        """Heartbeats of `node_ids`: a node that was down or disconnected comes back (status
        ready and node-update evals, in the log); every one is passed to the watcher."""
        statuses = await asyncio.to_thread(reads.node_statuses, node_ids)
        unknown = [n for n in node_ids if n not in statuses]
        if unknown:
            raise ApiError(404, f"unknown nodes: {', '.join(unknown)}")
        events: list[Event | NewEvent] = []
        evals: list[Evaluation] = []
        now = time.time_ns()
        returning = [n for n, status in statuses.items() if status != NODE_STATUS_READY]
        nodes = await asyncio.to_thread(reads.nodes_by_id, returning) if returning else {}
        for node in nodes.values():
            if node.status != NODE_STATUS_READY:
                back = node.model_copy(update={"status": NODE_STATUS_READY})
                events.append(NodeStatusUpdated(node_id=node.id, status=NODE_STATUS_READY, at=now))
                evals.extend(await node_update_evals(back))
        if evals:
            events.append(EvalsUpserted(evals=evals))
        index = await append(events) if events else await asyncio.to_thread(reads.index)
        ttls = [await heartbeats.ttl() for _ in node_ids]
        await beat(node_ids, ttls)
        return {
            "HeartbeatTTLs": dict(zip(node_ids, ttls, strict=True)),
            "EvalIDs": [e.id for e in evals],
            "Index": index,
        }

    @app.put("/v1/drover/node/{node_id}/heartbeat")
    @app.post("/v1/drover/node/{node_id}/heartbeat")
    async def node_heartbeat(node_id: str) -> dict[str, Any]:
        out = await heartbeat_nodes([node_id])
        return {
            "HeartbeatTTL": out["HeartbeatTTLs"][node_id],
            "EvalIDs": out["EvalIDs"],
            "Index": out["Index"],
        }

    @app.put("/v1/drover/heartbeats")
    @app.post("/v1/drover/heartbeats")
    async def node_heartbeats(request: Request) -> dict[str, Any]:
        body = await body_json(request)
        ids = body.get("NodeIDs") if isinstance(body, dict) else None
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
            raise ApiError(400, 'Request must be a JSON object with a non-empty "NodeIDs" list of node IDs')
        return await heartbeat_nodes(list(dict.fromkeys(ids)))

    @app.put("/v1/drover/node/{node_id}/status")
    @app.post("/v1/drover/node/{node_id}/status")
    async def node_status(node_id: str, request: Request) -> dict[str, Any]:
        body = await body_json(request)
        status = body.get("Status") if isinstance(body, dict) else None
        if status not in (NODE_STATUS_READY, NODE_STATUS_DOWN, "initializing", "disconnected"):
            raise ApiError(400, 'Status must be one of "initializing", "ready", "down", "disconnected"')
        node = await asyncio.to_thread(reads.node, node_id)
        if node is None:
            raise ApiError(404, "node not found")
        events: list[Event | NewEvent] = [
            NodeStatusUpdated(node_id=node_id, status=status, at=time.time_ns())
        ]
        evals: list[Evaluation] = []
        if status != node.status:
            evals = await node_update_evals(node.model_copy(update={"status": status}))
            if evals:
                events.append(EvalsUpserted(evals=evals))
        index = await append(events)
        return {"NodeModifyIndex": index, "EvalIDs": [e.id for e in evals], "Index": index}

    @app.put("/v1/drover/allocs/status")
    @app.post("/v1/drover/allocs/status")
    async def allocs_status(request: Request) -> dict[str, Any]:
        body = await body_json(request)
        if not isinstance(body, dict) or not isinstance(body.get("Updates"), list):
            raise ApiError(400, 'Request must be a JSON object with an "Updates" list')
        try:
            updates = [AllocClientUpdate.model_validate(u) for u in body["Updates"]]
        except ValidationError as e:
            raise ApiError(400, "Updates are invalid:\n" + "\n".join(_pydantic_problems(e, "Updates"))) from e
        bad = [
            u.client_status
            for u in updates
            if u.client_status not in ("pending", "running", "complete", "failed", "lost")
        ]
        if bad:
            raise ApiError(400, f"unknown ClientStatus: {', '.join(sorted(set(bad)))}")
        current = {u.id: await asyncio.to_thread(reads.alloc, u.id) for u in updates}
        missing = [i for i, a in current.items() if a is None]
        if missing:
            raise ApiError(404, f"unknown allocations: {', '.join(missing)}")
        # As Nomad's UpdateAlloc: an alloc that newly failed while the servers want it running
        # gets its job an alloc-failure eval (rescheduled per the reschedule block); one that
        # was unknown (its node disconnected) and runs again, a reconnect eval (original or
        # replacement, per disconnect.reconcile).
        triggers: dict[tuple[str, str], str] = {}
        for u in updates:
            a = current[u.id]
            if a is None or a.server_terminal():
                continue
            if u.client_status == "failed" and a.client_status != "failed":
                triggers[(a.namespace, a.job_id)] = TRIGGER_RETRY_FAILED_ALLOC
            elif u.client_status == "running" and a.client_status == "unknown":
                triggers.setdefault((a.namespace, a.job_id), TRIGGER_RECONNECT)
        evals = [
            new_eval(job, trigger)
            for (ns, jid), trigger in triggers.items()
            if (job := await asyncio.to_thread(reads.job, ns, jid)) is not None and not job.stop
        ]
        events: list[Event | NewEvent] = [
            AllocsClientUpdated(node_id=str(body.get("NodeID", "")), updates=updates)
        ]
        if evals:
            events.append(EvalsUpserted(evals=evals))
        index = await append(events)
        return {"Index": index, "EvalIDs": [e.id for e in evals]}

    @app.get("/v1/status/leader")
    async def leader() -> str:
        return f"{settings.api_host}:{settings.api_port}"

    return app


def _job_stub(j: Job) -> dict[str, Any]:
    return {
        "ID": j.id, "ParentID": j.parent_id, "Name": j.name, "Namespace": j.namespace, "Datacenters": j.datacenters,
        "NodePool": j.node_pool, "Type": j.type, "Priority": j.priority, "Status": j.status, "Stop": j.stop,
        "Version": j.version, "CreateIndex": j.create_index, "ModifyIndex": j.modify_index,
        "JobModifyIndex": j.job_modify_index, "SubmitTime": j.submit_time,
    }  # fmt: skip


# A read whose answer is JSON null rather than 404 (a job with no deployment).
NO_DEPLOYMENT = object()


def _alloc_stub(a: Any) -> dict[str, Any]:
    doc: dict[str, Any] = a.to_api()
    doc.pop("Metrics", None)
    return doc


def _node_stub(n: Node) -> dict[str, Any]:
    return {
        "ID": n.id, "Name": n.name, "Datacenter": n.datacenter, "NodeClass": n.node_class, "NodePool": n.node_pool,
        "Status": n.status, "StatusDescription": n.status_description, "SchedulingEligibility": n.scheduling_eligibility,
        "Drain": n.draining(), "CreateIndex": n.create_index, "ModifyIndex": n.modify_index,
    }  # fmt: skip
