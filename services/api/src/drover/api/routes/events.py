"""/v1/event/stream: Nomad's event stream, newline-delimited JSON frames `{"Index": N,
"Events": [...]}` with a `{}` heartbeat at connect and every 30 s; from any `?index=` with
nothing lost (drover.api.streamhub). Gzipped for a client that accepts it, as Nomad's agent does
(drover.api.streamgzip)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from drover.api.aclguard import identity
from drover.api.aclresolve import token_from
from drover.api.blocking import parse_index
from drover.api.errors import ApiError
from drover.api.jsondecode import JsonRoute
from drover.api.streamacl import check_subscription
from drover.api.streamgzip import Member, accepts_gzip, piece
from drover.api.streamhub import CLOSED, Frame, RunLines, StreamHub, Subscription
from drover.model.streamevents import parse_topics

router = APIRouter(route_class=JsonRoute, tags=["events"])

HEARTBEAT = b"{}\n"
OVERFLOWED = b'{"Error":"' + CLOSED.encode() + b'"}\n'
HEARTBEAT_GZ = piece(HEARTBEAT)
OVERFLOWED_GZ = piece(OVERFLOWED)


async def _hub(request: Request) -> Any:
    return request.app.state.stream


StreamHubDep = Annotated[StreamHub, Depends(_hub)]


def _params(request: Request) -> tuple[int, dict[str, set[str]], str]:
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
    return index, topics, request.query_params.get("namespace") or "default"


async def subscribe(
    request: Request, hub: StreamHub, topics: dict[str, set[str]], namespace: str
) -> Subscription:
    """The hub started (503 when it cannot be) and the request's subscription to `topics` in
    `namespace`; with ACLs, each topic checked as Nomad checks it (403), and again whenever an
    ACL token or policy changes. The console's event stream viewer subscribes the same way."""
    try:
        await hub.start()
    except Exception as e:
        raise ApiError(503, f"the event feed is unavailable: {e}") from e
    sub = Subscription(topics, namespace, request.app.state.settings.event_buffer)
    who = identity(request)
    if who is None:
        return sub
    version = hub.acl_version
    allowed, bound, again = await check_subscription(
        request.app.state.acl, request.app.state.reads, token_from(request.scope["headers"]), who.acl,
        topics, namespace,
    )  # fmt: skip
    if not allowed:
        raise ApiError(403, "Permission denied")
    return Subscription(topics, namespace, sub.buffer, bound, again, version)


@router.get("/v1/event/stream")
async def event_stream(request: Request, hub: StreamHubDep) -> StreamingResponse:
    index, topics, namespace = _params(request)
    sub = await subscribe(request, hub, topics, namespace)
    heartbeat = request.app.state.settings.event_heartbeat
    after = hub.after(index)  # "now" is when the request came, not its first read
    frames = hub.frames(sub, after, heartbeat)
    if accepts_gzip(request.headers.get("accept-encoding", "")):
        # Compressed as Nomad's agent compresses it for a client that asks (most do).
        headers = {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
        return StreamingResponse(_gzipped(sub, frames), media_type="application/json", headers=headers)
    return StreamingResponse(_lines(sub, frames, hub.runs), media_type="application/json")


async def _lines(
    sub: Subscription, frames: AsyncGenerator[list[Frame] | None], runs: RunLines
) -> AsyncIterator[bytes]:
    """The stream's lines: the heartbeat at connect, then each run of frames in one write."""
    try:
        yield HEARTBEAT
        async for run in frames:
            if run is None:
                yield HEARTBEAT
            elif line := runs.line(sub, run):
                yield line
        if sub.overflowed or sub.revoked:
            yield OVERFLOWED
    finally:
        # The client left (or the stream ended): the feed stops filling its queue now,
        # not when the generator is collected.
        await frames.aclose()


async def _gzipped(sub: Subscription, frames: AsyncGenerator[list[Frame] | None]) -> AsyncIterator[bytes]:
    """`_lines` as one gzip stream, each frame's piece compressed once for every subscriber."""
    member = Member()
    try:
        yield member.write([HEARTBEAT_GZ])
        async for run in frames:
            if run is None:
                yield member.write([HEARTBEAT_GZ])
            elif picked := [p for f in run if (p := sub.piece(f)) is not None]:
                yield member.write(picked)
        if sub.overflowed or sub.revoked:
            yield member.write([OVERFLOWED_GZ])
        yield member.end()
    finally:
        await frames.aclose()
