"""/ui/events: the tab's one server-sent-events connection. It subscribes to the topics of the
fragments on the page (`Topic:Key`, `*` for every key) on the API's event hub (the feed that
serves /v1/event/stream), and tells the tab which of them each run of log positions touched:

    id: <index>        event: change    data: Allocation:web Job:web

A tab that names its live fragments (`frag=<id> <url> <topic>...`) is sent, instead, the
fragments a run touches, rendered once for every tab (drover.api.ui.push); one that does not
re-fetches the fragments showing those topics itself. It resumes after a reconnect from the
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

import asyncio
import time
from collections.abc import AsyncGenerator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from drover.api.aclresolve import AclResolver, Identity
from drover.api.errors import ApiError
from drover.api.streamacl import NAMESPACE_TOPICS
from drover.api.streamhub import Frame, StreamHub, Subscription
from drover.api.ui import access, push, session
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
    params = request.query_params
    fragments, problems = push.parse(params.getlist("frag"), params.getlist("wait"))
    asked = params.getlist("topic") + sorted({t for f in fragments for t in f.topics})
    topics, wrong = parse_topics(asked)
    if problems or wrong:
        raise ApiError(400, "\n".join(problems + wrong))
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
    enabled = access.acl_enabled(request)
    tab = push.tab(request, fragments, lambda: access.key_of(reader.who if reader else None, enabled))
    if tab is not None:
        tab.latest = after
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(
        _stream(hub, sub, frames, after, reader, tab), media_type="text/event-stream", headers=headers
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
    reader: Reader | None = None, tab: push.Tab | None = None,
) -> AsyncGenerator[bytes]:  # fmt: skip
    """The tab's events. With `tab` (it named its fragments), the fragments a run touches are
    pushed (drover.api.ui.push) rather than named in a `change`."""
    ticked = time.monotonic()
    waiting: asyncio.Task[list[Frame] | None] | None = None
    try:
        yield f"retry: {RETRY_MS}\n".encode() + message("hello", after, str(after))
        while True:
            wait = tab.wait() if tab is not None else None
            if waiting is None and wait is None:
                try:
                    run = await anext(frames)
                except StopAsyncIteration:
                    break
            else:
                # A push waits for its second: the next run, or that second, whichever is first.
                waiting = waiting or asyncio.ensure_future(_next(frames))
                done, _ = await asyncio.wait({waiting}, timeout=wait)
                if not done and tab is not None:
                    if out := await tab.flush():
                        yield out
                    continue
                try:
                    run = waiting.result()
                except StopAsyncIteration:
                    break
                finally:
                    waiting = None
            if reader is not None and reader.expired():
                break
            if run is None:
                yield b": ping\n\n"
            elif not run:
                if tab is not None:
                    tab.resynced()
                    tab.latest = hub.position
                yield message("resync", hub.position, str(hub.position))
            elif found := frozenset().union(*(hits(f, sub, reader) for f in run)):
                if tab is None:
                    yield message("change", run[-1].index, " ".join(sorted(found)))
                else:
                    tab.latest = run[-1].index
                    tab.hit(found, run[-1].index)
                    if out := await tab.flush():
                        yield out
            elif time.monotonic() - ticked >= TICK and (tab is None or tab.wait() is None):
                ticked = time.monotonic()
                if tab is not None:
                    tab.latest = run[-1].index
                yield message("index", run[-1].index, str(run[-1].index))
            elif tab is not None:
                tab.latest = run[-1].index
        if reader is not None and (sub.revoked or reader.expired()):
            # The token was deleted or expired: the tab stops, rather than reconnect to a 403.
            yield message("signedout", hub.position, "")
    finally:
        if waiting is not None:
            waiting.cancel()
            await asyncio.gather(waiting, return_exceptions=True)
        await frames.aclose()


async def _next(frames: AsyncGenerator[list[Frame] | None]) -> list[Frame] | None:
    return await anext(frames)
