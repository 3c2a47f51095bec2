"""Routing by an index of the routes' first two path segments, instead of trying all of them.

FastAPI's router tries its routes in order until one matches: the API has over a hundred
(Nomad's paths and the console's), and `/v1/node/:id` was the 81st tried - a regular
expression and FastAPI's scope bookkeeping for each, 15-20% of a node read's CPU
(docs/experiments/2026-11-29-request-floor.md). A route can only match a path that starts with
its literal part (its path up to the first parameter), so the routes are kept per pair of
leading segments (`v1`, `node`); a request tries, in the routes' own order, only those of its
path's pair and those whose literal part is shorter than two segments. The first full match
is therefore the one the router would have found. Anything else (no full match: a method not
allowed, a slash to redirect, a 404 of no route) goes to the router's own search, unchanged.
"""

from __future__ import annotations

from fastapi import routing
from fastapi.telemetry._api import _route_selected
from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Match, Mount
from starlette.types import Receive, Scope, Send

Key = tuple[str, str]


def route_key(route: BaseRoute) -> Key | None:
    """The two leading segments every path the route matches starts with (None: it may match
    paths of any, or it has fewer than two literal segments)."""
    path = getattr(route, "path", None)
    if not isinstance(path, str) or not path.startswith("/"):
        return None
    literal, param, _ = path.partition("{")
    segments = literal.split("/")[1:]
    if param:
        # The literal part's last segment is cut by the parameter ("" if it ends with a slash).
        segments = segments[:-1]
    if len(segments) < 2 or not segments[0] or not segments[1]:
        return None
    return segments[0], segments[1]


def path_key(path: str) -> Key | None:
    parts = path.split("/", 3)
    return (parts[1], parts[2]) if len(parts) >= 3 else None


class RouteIndex:
    """The routes each pair of leading segments may match, in the routes' order."""

    def __init__(self, routes: list[BaseRoute]) -> None:
        self.size = len(routes)
        keys = [route_key(r) for r in routes]
        self.anywhere = [r for r, k in zip(routes, keys, strict=True) if k is None]
        self.by_key: dict[Key, list[BaseRoute]] = {
            key: [r for r, k in zip(routes, keys, strict=True) if k is None or k == key]
            for key in {k for k in keys if k is not None}
        }

    def candidates(self, path: str) -> list[BaseRoute]:
        key = path_key(path)
        return self.anywhere if key is None else self.by_key.get(key, self.anywhere)


class IndexedRouter(routing.APIRouter):
    """FastAPI's router, trying only the routes a request's path may match (`RouteIndex`)."""

    _index: RouteIndex | None = None

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            index = self._index
            if index is None or index.size != len(self.routes):
                index = self._index = RouteIndex(self.routes)
            for route in index.candidates(get_route_path(scope)):
                match, child_scope = route.matches(scope)
                if match == Match.FULL:
                    # What the router's own search does with the route it finds.
                    routing._apply_router_form_limits(scope, self.form_limits)
                    scope.setdefault("router", self)
                    routing._update_scope(scope, child_scope)
                    path = getattr(route, "path_format", None)
                    _route_selected(scope=scope, path=path, mount=isinstance(route, Mount))
                    await route.handle(scope, receive, send)
                    return
        await super().app(scope, receive, send)


def indexed(router: routing.APIRouter) -> None:
    """Make the app's router an `IndexedRouter` (FastAPI makes its own; its state is kept).
    The router calls what it bound as its stack when it was made: its own `app`, which is
    bound again (a router with middleware of its own would have wrapped it)."""
    if router.middleware_stack != router.app:
        raise ValueError("the router has middleware of its own")
    router.__class__ = IndexedRouter
    router.middleware_stack = router.app
