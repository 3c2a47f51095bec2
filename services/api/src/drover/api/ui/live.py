"""/ui/events: the tab's one server-sent-events connection. It subscribes to the topics of the
fragments on the page (`Topic:Key`, `*` for every key) on the API's event hub (the feed that
serves /v1/event/stream), and tells the tab which of them each run of log positions touched:

    id: <index>        event: change    data: Allocation:web Job:web

The tab re-fetches the fragments showing those topics. It resumes after a reconnect from the
last id it saw (EventSource's `Last-Event-ID`, or `?last=` for a connection it opened again
itself: a hidden tab closes its connection): positions still in the hub's ring are read from
it; older ones are not replayed from the log - the tab is told to refresh everything
(`event: resync`), which is cheaper and shows the same. A run that touched none of its topics
still moves its id on, at most once a second (`event: index`).

With ACLs on it is the signed-in token's (its cookie, drover.api.ui.session): a change is told
only of the events the token may read, by the event stream's rules (drover.api.streamacl: a
job's, alloc's, eval's or deployment's with `read-job` in its namespace, a node's with
`node:read`, any other topic to a management token alone); the token is read again at every
ACL change, and the connection closed (`event: signedout`) once it is deleted or expired."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from drover.api.aclresolve import AclResolver, Identity
from drover.api.errors import ApiError
from drover.api.streamacl import NAMESPACE_TOPICS
from drover.api.streamhub import Frame, StreamHub, Subscription
from drover.api.ui import access, session
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


class Reader:
    """What a signed-in tab may read of the feed: its token, read again at each ACL change."""

    def __init__(self, resolver: AclResolver, secret: str, who: Identity) -> None:
        self.resolver = resolver
        self.secret = secret
        self.who = who

    async def again(self) -> bool:
        """Whether the token still stands (its ACL as it is now)."""
        who = await self.resolver.resolve(self.secret, fresh=True)
        if who is None or who.node:
            return False
        self.who = who
        return True

    def expired(self) -> bool:
        token = self.who.token
        return token is not None and token.expired(time.time_ns())

    def sees(self, event: dict[str, Any]) -> bool:
        acl = self.who.acl
        if acl.management:
            return True
        capability = NAMESPACE_TOPICS.get(event["Topic"])
        if capability is not None:
            return acl.allow_namespace_operation(event["Namespace"], capability)
        return event["Topic"] == "Node" and acl.allow_node_read()


def hits(f: Frame, sub: Subscription, reader: Reader | None = None) -> frozenset[str]:
    """The tab's topics (`Topic:Key`) that events of `f` match, worked out once per frame for
    every tab subscribed to the same (Nomad's matching: the key, or one of the filter keys:
    an alloc's job and deployment). With a `reader` that is not a management token's, of the
    events it may read alone, worked out for this tab (its ACL is its own)."""
    scoped = reader is not None and not reader.who.acl.management
    cached = None if scoped else f.hits.get(sub.key)
    if cached is not None:
        return cached
    out: set[str] = set()
    for event, _ in f.events:
        if scoped and reader is not None and not reader.sees(event):
            continue
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
    found = frozenset(out)
    if not scoped:
        f.hits[sub.key] = found
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
    try:
        await hub.start()
    except Exception as e:
        raise ApiError(503, f"the event feed is unavailable: {e}") from e
    reader = _reader(request)
    buffer = request.app.state.settings.event_buffer
    if reader is None:
        sub = Subscription(topics, ALL, buffer)
    else:
        sub = Subscription(topics, ALL, buffer, authorize=reader.again, acl_version=hub.acl_version)
    last = _last(request)
    after = last or hub.position
    frames = hub.frames(sub, after, HEARTBEAT, replay_log=False)
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(
        _stream(hub, sub, frames, after, reader), media_type="text/event-stream", headers=headers
    )


def _reader(request: Request) -> Reader | None:
    """The signed-in token's reader (None: ACLs are off)."""
    who = access.identity(request)
    if not access.acl_enabled(request) or who is None:
        return None
    sealed = request.cookies.get(session.COOKIE, "")
    secret = session.unseal(request.app.state.keyring, sealed) if sealed else ""
    return Reader(request.app.state.acl, secret or "", who)


async def _stream(
    hub: StreamHub, sub: Subscription, frames: AsyncGenerator[list[Frame] | None], after: int,
    reader: Reader | None = None,
) -> AsyncGenerator[bytes]:  # fmt: skip
    ticked = time.monotonic()
    try:
        yield f"retry: {RETRY_MS}\n".encode() + message("hello", after, str(after))
        async for run in frames:
            if reader is not None and reader.expired():
                break
            if run is None:
                yield b": ping\n\n"
            elif not run:
                yield message("resync", hub.position, str(hub.position))
            elif found := frozenset().union(*(hits(f, sub, reader) for f in run)):
                yield message("change", run[-1].index, " ".join(sorted(found)))
            elif time.monotonic() - ticked >= TICK:
                ticked = time.monotonic()
                yield message("index", run[-1].index, str(run[-1].index))
        if reader is not None and (sub.revoked or reader.expired()):
            # The token was deleted or expired: the tab stops, rather than reconnect to a 403.
            yield message("signedout", hub.position, "")
    finally:
        await frames.aclose()
