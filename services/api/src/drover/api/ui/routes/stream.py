"""/ui/stream: the event stream viewer - the events of chosen topics (and keys), of a namespace,
from a chosen index or from now, as they come. Its page names what is watched; its script
(static/stream.js) reads /ui/stream/events, /v1/event/stream's frames as server-sent events:

    id: <index>        event: frame        data: {"Index": N, "Events": [...]}

A reconnect (EventSource's `Last-Event-ID`, after a server restart) and a resume after Pause
(`?index=` the next index) continue where the tab left off: positions the feed no longer holds
are replayed from the log (drover.api.streamhub), so nothing is missed or shown twice. A run of
positions none of whose events were asked for moves the index on, at most once a second
(`event: index`). The page renders event data with textContent only (never as HTML)."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse

from drover.api.errors import ApiError
from drover.api.routes.events import subscribe
from drover.api.streamhub import CLOSED, Frame, StreamHub, Subscription
from drover.api.ui.render import view
from drover.model.streamevents import ALL, TOPICS, parse_topics

router = APIRouter()

HEARTBEAT = 15.0
RETRY_MS = 2000
TICK = 1.0
# Rows the page keeps (the oldest dropped past it).
KEEP = 200
KEEP_MAX = 5000


async def _hub(request: Request) -> Any:
    return request.app.state.stream


StreamHubDep = Annotated[StreamHub, Depends(_hub)]


def chosen(query: Any) -> tuple[list[str], list[str]]:
    """The `Topic:Key` values the viewer's form asks for - `topic=<Topic>` boxes and each
    topic's `key.<Topic>` (keys separated by commas or spaces; none: every key) - and every
    problem with them."""
    values: list[str] = []
    problems: list[str] = []
    for topic in query.getlist("topic"):
        if topic != ALL and topic not in TOPICS:
            problems.append(f"Unknown topic {topic!r}: one of {', '.join((*TOPICS, ALL))}")
            continue
        keys = [k for k in query.get(f"key.{topic}", "").replace(",", " ").split() if k]
        bad = [k for k in keys if ":" in k]
        problems += [f"Invalid key {k!r} of {topic}: no ':' in a key" for k in bad]
        values += [f"{topic}:{k}" for k in keys if k not in bad] if keys else [topic]
    return values, problems


def _number(raw: str, name: str, default: int, top: int, problems: list[str]) -> int:
    raw = raw.strip()
    if not raw:
        return default
    if not (raw.isdigit() and raw.isascii()) or int(raw) > top:
        problems.append(f"Invalid {name} {raw!r}: a whole number from 0 to {top}")
        return default
    return int(raw)


@router.get("/ui/stream", include_in_schema=False)
async def viewer(request: Request) -> Response:
    q = request.query_params
    values, problems = chosen(q)
    index = _number(q.get("index", ""), "index", 0, 2**63 - 1, problems)
    keep = _number(q.get("keep", ""), "keep", KEEP, KEEP_MAX, problems) or KEEP
    namespace = q.get("namespace", "").strip() or "default"
    picked = set(q.getlist("topic")) if "topic" in q else {ALL}
    source = "/ui/stream/events?" + urlencode(
        [("topic", v) for v in values or [ALL]] + [("namespace", namespace)]
    )
    return view(request, "stream.html", 400 if problems else 200, title="Event stream", topics=(*TOPICS, ALL),
                picked=picked, keys={t: q.get(f"key.{t}", "") for t in TOPICS}, namespace=namespace,
                from_index=index, keep=keep, source=source, problems=problems)  # fmt: skip


def _after(request: Request, hub: StreamHub) -> int:
    """The position the stream starts after: the last one the tab saw (a reconnect's
    Last-Event-ID), else before `?index=` (none or 0: now)."""
    last = request.headers.get("last-event-id", "")
    if last.isdigit() and last.isascii():
        return int(last)
    raw = request.query_params.get("index", "")
    if raw and not (raw.isdigit() and raw.isascii()):
        raise ApiError(400, "Invalid index: a non-negative integer")
    return hub.after(int(raw or 0))


@router.get("/ui/stream/events", include_in_schema=False)
async def stream_events(request: Request, hub: StreamHubDep) -> StreamingResponse:
    topics, problems = parse_topics(request.query_params.getlist("topic"))
    if problems:
        raise ApiError(400, "\n".join(problems))
    namespace = request.query_params.get("namespace") or "default"
    sub = await subscribe(request, hub, topics, namespace)
    after = _after(request, hub)
    frames = hub.frames(sub, after, HEARTBEAT)
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(_sse(sub, frames, after), media_type="text/event-stream", headers=headers)


def _message(event: str, index: int, data: bytes) -> bytes:
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (index, event.encode(), data)


async def _sse(
    sub: Subscription, frames: AsyncGenerator[list[Frame] | None], after: int
) -> AsyncGenerator[bytes]:
    ticked = time.monotonic()
    try:
        yield b"retry: %d\n" % RETRY_MS + _message("hello", after, b"%d" % after)
        async for run in frames:
            if run is None:
                yield b": ping\n\n"
                continue
            # Each frame's line is compact JSON (no newline inside): one SSE data line as it is.
            out = [_message("frame", f.index, line.rstrip(b"\n")) for f in run if (line := sub.encode(f))]
            if out:
                yield b"".join(out)
            elif time.monotonic() - ticked >= TICK:
                ticked = time.monotonic()
                yield _message("index", run[-1].index, b"%d" % run[-1].index)
        if sub.overflowed or sub.revoked:
            yield b"event: closed\ndata: " + CLOSED.encode() + b"\n\n"
    finally:
        await frames.aclose()
