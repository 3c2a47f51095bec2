"""/ui/events: the tab's one server-sent-events connection. It subscribes to the topics of the
fragments on the page (`Topic:Key`, `*` for every key) on the API's event hub (the feed that
serves /v1/event/stream), and tells the tab which of them each run of log positions touched:

    id: <index>        event: change    data: Allocation:web Job:web

The tab re-fetches the fragments showing those topics. It resumes after a reconnect from the
last id it saw (EventSource's `Last-Event-ID`, or `?last=` for a connection it opened again
itself: a hidden tab closes its connection): positions still in the hub's ring are read from
it; older ones are not replayed from the log - the tab is told to refresh everything
(`event: resync`), which is cheaper and shows the same. A run that touched none of its topics
still moves its id on, at most once a second (`event: index`)."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from drover.api.errors import ApiError
from drover.api.streamhub import Frame, StreamHub, Subscription
from drover.model.streamevents import ALL, parse_topics

router = APIRouter()

# Seconds between comments that keep an idle connection open through proxies.
HEARTBEAT = 15.0
# Milliseconds the browser waits before it reconnects.
RETRY_MS = 2000
# Seconds between `index` events when no run touches the tab's topics.
TICK = 1.0


async def _hub(request: Request) -> Any:
    return request.app.state.stream


StreamHubDep = Annotated[StreamHub, Depends(_hub)]


def hits(f: Frame, sub: Subscription) -> frozenset[str]:
    """The tab's topics (`Topic:Key`) that events of `f` match, worked out once per frame for
    every tab subscribed to the same (Nomad's matching: the key, or one of the filter keys:
    an alloc's job and deployment)."""
    cached = f.hits.get(sub.key)
    if cached is not None:
        return cached
    out: set[str] = set()
    for event, _ in f.events:
        topic = event["Topic"]
        for name in (topic, ALL):
            keys = sub.topics.get(name)
            if not keys:
                continue
            if ALL in keys:
                out.add(f"{name}:{ALL}")
            for k in (event["Key"], *(event["FilterKeys"] or ())):
                if k in keys:
                    out.add(f"{name}:{k}")
    found = f.hits[sub.key] = frozenset(out)
    return found


def _last(request: Request) -> int:
    for value in (request.headers.get("last-event-id"), request.query_params.get("last")):
        if value and value.isdigit() and value.isascii():
            return int(value)
    return 0


def message(event: str, index: int, data: str) -> bytes:
    return f"id: {index}\nevent: {event}\ndata: {data}\n\n".encode()


@router.get("/ui/events", include_in_schema=False)
async def events(request: Request, hub: StreamHubDep) -> StreamingResponse:
    topics, problems = parse_topics(request.query_params.getlist("topic"))
    if problems:
        raise ApiError(400, "\n".join(problems))
    sub = Subscription(topics, ALL, request.app.state.settings.event_buffer)
    try:
        await hub.start()
    except Exception as e:
        raise ApiError(503, f"the event feed is unavailable: {e}") from e
    last = _last(request)
    after = last or hub.position
    frames = hub.frames(sub, after, HEARTBEAT, replay_log=False)
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(
        _stream(hub, sub, frames, after), media_type="text/event-stream", headers=headers
    )


async def _stream(
    hub: StreamHub, sub: Subscription, frames: AsyncGenerator[list[Frame] | None], after: int
) -> AsyncGenerator[bytes]:
    ticked = time.monotonic()
    try:
        yield f"retry: {RETRY_MS}\n".encode() + message("hello", after, str(after))
        async for run in frames:
            if run is None:
                yield b": ping\n\n"
            elif not run:
                yield message("resync", hub.position, str(hub.position))
            elif found := frozenset().union(*(hits(f, sub) for f in run)):
                yield message("change", run[-1].index, " ".join(sorted(found)))
            elif time.monotonic() - ticked >= TICK:
                ticked = time.monotonic()
                yield message("index", run[-1].index, str(run[-1].index))
    finally:
        await frames.aclose()
