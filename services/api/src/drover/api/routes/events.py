"""/v1/event/stream: Nomad's event stream, newline-delimited JSON frames `{"Index": N,
"Events": [...]}` with a `{}` heartbeat at connect and every 30 s; from any `?index=` with
nothing lost (drover.api.eventhub)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from drover.api.blocking import parse_index
from drover.api.body import JsonRoute
from drover.api.errors import ApiError
from drover.api.eventhub import CLOSED, EventHub, Subscription
from drover.model.streamevents import parse_topics

router = APIRouter(route_class=JsonRoute, tags=["events"])


async def _hub(request: Request) -> Any:
    return request.app.state.events


EventHubDep = Annotated[EventHub, Depends(_hub)]


def _params(request: Request) -> tuple[int, Subscription]:
    """The subscription asked for; every problem with the query in one 400."""
    problems = []
    index = 0
    try:
        index = parse_index(request.query_params.get("index"))
    except ApiError:
        problems.append("Invalid index: a non-negative integer")
    topics, bad = parse_topics(request.query_params.getlist("topic"))
    problems += bad
    if problems:
        raise ApiError(400, "\n".join(problems))
    buffer = request.app.state.settings.event_buffer
    return index, Subscription(topics, request.query_params.get("namespace") or "default", buffer)


@router.get("/v1/event/stream")
async def event_stream(request: Request, hub: EventHubDep) -> StreamingResponse:
    index, sub = _params(request)
    try:
        await hub.start()
    except Exception as e:
        raise ApiError(503, f"the event feed is unavailable: {e}") from e
    heartbeat = request.app.state.settings.event_heartbeat
    after = hub.after(index)  # "now" is when the request came, not its first read

    async def lines() -> AsyncIterator[bytes]:
        frames = hub.frames(sub, after, heartbeat)
        try:
            yield b"{}\n"
            async for run in frames:
                if run is None:
                    yield b"{}\n"
                elif picked := [line for f in run if (line := sub.encode(f)) is not None]:
                    yield picked[0] if len(picked) == 1 else b"".join(picked)
            if sub.overflowed:
                yield b'{"Error":"' + CLOSED.encode() + b'"}\n'
        finally:
            # The client left (or the stream ended): the feed stops filling its queue now,
            # not when the generator is collected.
            await frames.aclose()

    return StreamingResponse(lines(), media_type="application/json")
