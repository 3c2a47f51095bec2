"""A streamed response's chunks written without a copy (drover.api.chunked), through a real
uvicorn on the API's settings: the bytes on the wire are HTTP/1.1 chunked encoding exactly as
uvicorn's own framing gives them, for small and large chunks, a response with a length, and
keep-alive after a stream."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from uvicorn.protocols.http import httptools_impl

from drover.api import chunked
from drover.api.server import uvicorn_config
from drover.runtime.embedded import free_port, wait_for_port

CHUNKS = [b"{}\n", b"x" * 70_000, b"", b"y" * 3_000_000, b'{"Index":1}\n']


async def _stream(request: Request) -> StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        for c in CHUNKS:
            yield c

    return StreamingResponse(body(), media_type="application/json")


async def _fixed(request: Request) -> Response:
    return Response(b"fixed", media_type="text/plain")


@contextlib.contextmanager
def _serve(installed: bool) -> Iterator[int]:
    original = httptools_impl.RequestResponseCycle
    if installed:
        chunked.install()
    port = free_port()
    app = Starlette(routes=[Route("/stream", _stream), Route("/fixed", _fixed)])
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for_port(port, 30)
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
        httptools_impl.RequestResponseCycle = original  # type: ignore[misc]


def _exchange(port: int, requests: bytes, until: bytes, count: int) -> bytes:
    """Send `requests` on one connection and read until `until` was seen `count` times."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(requests)
        got = b""
        deadline = time.monotonic() + 20
        while got.count(until) < count and time.monotonic() < deadline:
            data = s.recv(1 << 20)
            if not data:
                break
            got += data
        return got


def _body(raw: bytes) -> tuple[list[bytes], bytes]:
    """The chunks of a chunked response, and what follows its last chunk."""
    head, rest = raw.split(b"\r\n\r\n", 1)
    assert b"transfer-encoding: chunked" in head.lower()
    chunks = []
    while True:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            assert rest.startswith(b"\r\n")
            return chunks, rest[2:]
        chunks.append(rest[:size])
        assert rest[size : size + 2] == b"\r\n"
        rest = rest[size + 2 :]


REQUESTS = b"GET /stream HTTP/1.1\r\nHost: t\r\n\r\nGET /fixed HTTP/1.1\r\nHost: t\r\n\r\n"


def test_chunks_are_framed_as_uvicorn_frames_them() -> None:
    with _serve(installed=False) as port:
        theirs = _exchange(port, REQUESTS, b"fixed", 1)
    with _serve(installed=True) as port:
        assert httptools_impl.RequestResponseCycle is chunked.ChunkedCycle
        ours = _exchange(port, REQUESTS, b"fixed", 1)
    chunks, after = _body(ours)
    assert chunks == [c for c in CHUNKS if c]
    # The same bytes uvicorn's own framing puts on the wire (but for its Date header).
    strip = [line for line in ours.split(b"\r\n") if not line.startswith(b"date:")]
    assert strip == [line for line in theirs.split(b"\r\n") if not line.startswith(b"date:")]
    # The connection goes on after the stream: the next response on it is whole.
    assert after.startswith(b"HTTP/1.1 200") and after.endswith(b"fixed")


def test_a_head_request_and_a_sized_body_pass_through_uvicorn_s_send() -> None:
    with _serve(installed=True) as port:
        raw = _exchange(port, b"HEAD /stream HTTP/1.1\r\nHost: t\r\n\r\n", b"\r\n\r\n", 1)
        fixed = _exchange(port, b"GET /fixed HTTP/1.1\r\nHost: t\r\n\r\n", b"fixed", 1)
    assert raw.startswith(b"HTTP/1.1 200") and raw.endswith(b"\r\n\r\n")
    assert b"content-length: 5" in fixed.lower() and fixed.endswith(b"\r\n\r\nfixed")
