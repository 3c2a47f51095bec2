"""The agent's HTTP listener: for the allocs on this node, `GET /v1/client/fs/logs/:alloc_id`,
`GET /v1/client/allocation/:alloc_id/checks` (their service checks' latest results) and
`GET /v1/client/allocation/:alloc_id/stats` (their resource usage, Nomad's AllocResourceUsage:
drover.client.usage), which the API forwards to (the node's HTTPAddr), as Nomad's servers
forward to their clients. Logs go out in Nomad's frames (drover.control.client.logs.frame), or
the bytes alone with plain=true."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import uvicorn

from drover.client.logstream import listing, stream
from drover.control.client.logs import HEARTBEAT, LogsQuery, frame, parse_logs_query

log = logging.getLogger("drover.client")
PREFIX = "/v1/client/fs/logs/"
STATS = re.compile(r"/v1/client/allocation/([0-9A-Za-z-]+)/stats")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
# What the agent knows of an alloc: its directory, and its tasks with whether each has started
# (None: the alloc is not here).
AllocLookup = Callable[[str], tuple[Path, dict[str, bool]] | None]
# An alloc's resource usage (None: the alloc is not running here).
StatsLookup = Callable[[str], Awaitable[dict[str, Any] | None]]
# An alloc's check results by check ID (None: the alloc is not here).
ChecksLookup = Callable[[str], dict[str, object] | None]
CHECKS_PREFIX = "/v1/client/allocation/"
CHECKS_SUFFIX = "/checks"


class LogsApp:
    """The ASGI application serving the allocs' logs that `lookup` finds."""

    def __init__(
        self, lookup: AllocLookup, checks: ChecksLookup | None = None, stats: StatsLookup | None = None
    ) -> None:
        self.lookup = lookup
        self.checks = checks
        self.stats = stats

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if scope["method"] == "GET" and self.stats is not None and (m := STATS.fullmatch(path)):
            usage = await self.stats(m.group(1))
            if usage is None:
                await _answer(send, 404, f"unknown allocation {m.group(1)!r} on this node")
            else:
                await _json(send, usage)
            return
        if scope["method"] == "GET" and path.startswith(CHECKS_PREFIX) and path.endswith(CHECKS_SUFFIX):
            await self._checks(send, path[len(CHECKS_PREFIX) : -len(CHECKS_SUFFIX)])
            return
        if scope["method"] != "GET" or not path.startswith(PREFIX) or "/" in path[len(PREFIX) :]:
            await _answer(send, 404, f"no such endpoint: {scope['method']} {path}")
            return
        params = dict(parse_qsl(scope.get("query_string", b"").decode(), keep_blank_values=True))
        query, problems = parse_logs_query(params)
        if query is None:
            await _answer(send, 400, "\n".join(problems))
            return
        alloc_id = path[len(PREFIX) :]
        found = self.lookup(alloc_id)
        if found is None:
            await _answer(send, 404, f"unknown allocation {alloc_id!r} on this node")
            return
        alloc_dir, tasks = found
        if tasks and query.task not in tasks:
            await _answer(send, 400, f"unknown task name {query.task!r}")
            return
        log_dir = alloc_dir / "alloc" / "logs"
        if not listing(log_dir, query):
            started = tasks.get(query.task, False)
            why = "log entry for task {!r} and log type {!r} not found" if started else (
                "task {!r} not started yet. No logs available"
            )  # fmt: skip
            await _answer(send, 404, why.format(query.task, query.log_type))
            return
        await _stream(send, receive, log_dir, query)

    async def _checks(self, send: Send, alloc_id: str) -> None:
        found = self.checks(alloc_id) if self.checks is not None and "/" not in alloc_id else None
        if found is None:
            await _answer(send, 404, f"unknown allocation {alloc_id!r} on this node")
            return
        body = json.dumps(found).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def _json(send: Send, value: Any) -> None:
    body = json.dumps(value).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _answer(send: Send, status: int, text: str) -> None:
    body = text.encode() + b"\n"
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _stream(send: Send, receive: Receive, log_dir: Path, query: LogsQuery) -> None:
    """Send the chunks as they come, until the stream ends or the client goes."""
    kind = b"text/plain; charset=utf-8" if query.plain else b"application/json"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]})

    async def pump() -> None:
        async for chunk in stream(log_dir, query):
            if query.plain:
                body = chunk.data
            elif not (chunk.data or chunk.event):
                body = HEARTBEAT
            else:
                body = frame(chunk.file, chunk.offset, chunk.data, chunk.event)
            if body:
                await send({"type": "http.response.body", "body": body, "more_body": True})

    async def gone() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    sender, watcher = asyncio.create_task(pump()), asyncio.create_task(gone())
    try:
        await asyncio.wait({sender, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (sender, watcher):
            t.cancel()
        with contextlib.suppress(asyncio.CancelledError, OSError):
            await sender
    if sender.done() and not sender.cancelled() and sender.exception() is None:
        await send({"type": "http.response.body", "body": b""})


class _Server(uvicorn.Server):
    """uvicorn inside the agent's own loop: the agent handles the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield


def bind(address: str) -> socket.socket:
    """A listening socket on HOST:PORT (port 0: any free one)."""
    host, _, port = address.rpartition(":")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]") or "0.0.0.0", int(port)))
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve(app: LogsApp, sock: socket.socket, stop: asyncio.Event) -> None:
    """Serve `app` on `sock` until `stop` is set."""
    # log_config None: the agent's logging stays as the agent set it up.
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_config=None,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
    )
    server = _Server(config)
    runner = asyncio.create_task(server.serve(sockets=[sock]))
    await stop.wait()
    server.should_exit = True
    await runner
