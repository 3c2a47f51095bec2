"""What every request passes before it is routed: a body over the limit is refused (413)
before it is read, and a path or query holding a NUL character (which no stored text may hold)
is refused (400). Every body is JSON, whatever its content type says (`curl -d` sends a form
type), as Nomad's agent reads it - except the web console's (/ui/), whose actions are forms.

Every request it passes on is timed for `GET /v1/metrics` (`observe(scope, seconds)`, with the
route the router matched in the scope).

A plain ASGI middleware: Starlette's `@app.middleware("http")` runs every request in a task of
its own and passes its response through a memory stream."""

from __future__ import annotations

import time
from collections.abc import Callable

from fastapi.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

_JSON = (b"content-type", b"application/json")
# Methods that send no body: nothing to measure or to read as JSON.
_READS = frozenset({"GET", "HEAD", "OPTIONS"})


def _has_nul(scope: Scope) -> bool:
    query: bytes = scope.get("query_string", b"")
    return "\x00" in scope["path"] or b"%00" in query or b"\x00" in query


def _unobserved(scope: Scope, seconds: float) -> None:
    pass


class RequestGuard:
    def __init__(
        self, app: ASGIApp, limit: int, observe: Callable[[Scope, float], None] = _unobserved
    ) -> None:
        self.app = app
        self.limit = limit
        self.observe = observe

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _has_nul(scope):
            response = PlainTextResponse("The request's path or query holds a NUL character", status_code=400)
            await response(scope, receive, send)
            return
        if scope["method"] in _READS:
            start = time.perf_counter()
            try:
                await self.app(scope, receive, send)
            finally:
                self.observe(scope, time.perf_counter() - start)
            return
        headers = []
        form = scope["path"].startswith("/ui/")
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await PlainTextResponse("Request body too large", status_code=413)(scope, receive, send)
                return
            if name != b"content-type" or form:
                headers.append((name, value))
        if not form:
            headers.append(_JSON)
        start = time.perf_counter()
        scope = {**scope, "headers": headers}
        try:
            await self.app(scope, receive, send)
        finally:
            self.observe(scope, time.perf_counter() - start)
