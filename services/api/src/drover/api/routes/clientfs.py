"""/v1/client/fs/logs/:alloc_id: a task's stdout or stderr, from the agent holding the alloc
(drover.api.forward), in Nomad's frames or as plain text, followed with follow=true."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

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
