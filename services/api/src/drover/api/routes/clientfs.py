"""What the agent holding an alloc answers (drover.api.forward): /v1/client/fs/logs/:alloc_id, a
task's stdout or stderr in Nomad's frames or as plain text, followed with follow=true; and
/v1/client/allocation/:alloc_id/stats, its resource usage (what the Nomad Autoscaler's nomad
APM reads)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response, StreamingResponse

from drover.api.deps import ReadsDep
from drover.api.errors import ApiError
from drover.api.forward import ClientForwarder
from drover.api.jsondecode import JsonRoute
from drover.control.client.logs import parse_logs_query

router = APIRouter(route_class=JsonRoute, tags=["client"])


async def _forwarder(request: Request) -> ClientForwarder:
    forwarder: ClientForwarder = request.app.state.client_forwarder
    return forwarder


ForwarderDep = Annotated[ClientForwarder, Depends(_forwarder)]


@router.get("/v1/client/fs/logs/{alloc_id}")
async def alloc_logs(
    alloc_id: str, request: Request, reads: ReadsDep, forwarder: ForwarderDep
) -> StreamingResponse:
    query, problems = parse_logs_query(request.query_params)
    if query is None:
        raise ApiError(400, "\n".join(problems))
    address = await forwarder.node_address(reads, alloc_id)
    body = await forwarder.stream(address, f"/v1/client/fs/logs/{alloc_id}", query.params(), query.follow)
    kind = "text/plain; charset=utf-8" if query.plain else "application/json"
    return StreamingResponse(body, media_type=kind)


@router.get("/v1/client/allocation/{alloc_id}/stats")
async def alloc_stats(alloc_id: str, reads: ReadsDep, forwarder: ForwarderDep) -> Response:
    """Nomad's AllocResourceUsage, as the agent measured it."""
    address = await forwarder.node_address(reads, alloc_id)
    body = await forwarder.stream(address, f"/v1/client/allocation/{alloc_id}/stats", {}, follow=False)
    return Response(b"".join([chunk async for chunk in body]), media_type="application/json")
