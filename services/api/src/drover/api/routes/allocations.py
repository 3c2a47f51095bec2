"""/v1/allocations, /v1/allocation/:id, an alloc's stop and Nomad's client alloc restart."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.blocking import Blocking, EncodedPage, parse_per_page
from drover.api.deps import BlockingDep, CommandsDep
from drover.api.encoded import Encoded
from drover.api.jsondecode import JsonRoute
from drover.api.listfilter import filtered_paged, query_filter
from drover.api.requestmodels import AllocRestartBody
from drover.api.views import alloc_stub
from drover.control.commands import allocs
from drover.model.namespace import ALL_NAMESPACES, DEFAULT_NAMESPACE
from drover.runtime.watches import alloc_key, list_keys

router = APIRouter(route_class=JsonRoute, tags=["allocations"])


@router.get("/v1/allocations")
async def list_allocs(request: Request, prefix: str = "", namespace: str = DEFAULT_NAMESPACE) -> Response:
    """The namespace's allocs (`*`: every one's), by ID; without ?filter=, each stub encoded
    once per change of its alloc (drover.api.encoded)."""
    blocking: Blocking = request.app.state.blocking
    ns = None if namespace == ALL_NAMESPACES else namespace
    if query_filter(request) is None:
        encoded: Encoded = request.app.state.encoded

        def page() -> EncodedPage:
            per_page = parse_per_page(request.query_params.get("per_page"))
            start = request.query_params.get("next_token", "")
            rows = blocking.reads.alloc_docs(ns, prefix, start, per_page + 1 if per_page else 0)
            token = rows[per_page][0] if per_page and len(rows) > per_page else ""
            return EncodedPage(encoded.alloc_stubs([doc for _, doc in rows[: per_page or None]]), token)

        return await blocking.read(request, page, list_keys("allocs", namespace))
    fn = filtered_paged(
        request,
        lambda start, limit: blocking.reads.allocs(namespace=ns, prefix=prefix, start=start, limit=limit),
        shape=lambda found: [alloc_stub(a) for a in found],
    )
    return await blocking.read(request, fn, list_keys("allocs", namespace))


@router.get("/v1/allocation/{alloc_id}")
async def read_alloc(alloc_id: str, request: Request, blocking: BlockingDep) -> Response:
    return await blocking.read(request, lambda: blocking.reads.alloc(alloc_id), [alloc_key(alloc_id)])


@router.put("/v1/allocation/{alloc_id}/stop")
@router.post("/v1/allocation/{alloc_id}/stop")
async def stop_alloc(alloc_id: str, commands: CommandsDep, no_shutdown_delay: bool = False) -> dict[str, Any]:
    """Stop an alloc (Nomad's alloc stop): marked to migrate, with an alloc-stop eval, so the
    scheduler stops it and places its replacement. Answers Nomad's AllocStopResponse."""
    change, positions = await commands.run(
        lambda reads: allocs.stop(reads, alloc_id, no_shutdown_delay, time.time_ns()),
        span="alloc.stop",
        what=f"alloc {alloc_id} stopped",
    )
    return {"EvalID": change.eval_ids[0], "Index": positions[-1]}


@router.put("/v1/client/allocation/{alloc_id}/restart")
@router.post("/v1/client/allocation/{alloc_id}/restart")
async def restart_alloc(
    alloc_id: str, commands: CommandsDep, body: AllocRestartBody | None = None
) -> dict[str, Any]:
    """Restart an alloc's tasks in place (Nomad's alloc restart), recorded in the log: the
    node's agent acts on it and reports a "Restart Signaled" task event."""
    body = body or AllocRestartBody()
    change, positions = await commands.run(
        lambda reads: allocs.restart_alloc(reads, alloc_id, body.task_name, body.all_tasks, time.time_ns())
    )
    return {"Index": positions[-1], "RestartID": change.request_id}
