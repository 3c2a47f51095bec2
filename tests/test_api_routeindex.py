"""The API's router tries only the routes a path may match (drover.api.routeindex): for a path
made from every route of the app (ACLs off and on), each method picks the route FastAPI's own
search through all of them picks - or, where none matches fully, that search runs."""

from __future__ import annotations

import re

import pytest
from starlette.routing import BaseRoute, Match, Route

from drover.api.app import create_app
from drover.api.routeindex import IndexedRouter, RouteIndex, path_key, route_key
from drover.runtime.settings import Settings

FILLS = ("abc", "a/b", "x.css")
EXTRA = ("/", "/ui", "/v1", "/v1/", "/v1/node", "/v1/nodes/", "/v1/job/a/b/summary", "/nope/x/y")


def _first(routes: list[BaseRoute], path: str, method: str) -> BaseRoute | None:
    scope = {
        "type": "http",
        "path": path,
        "method": method,
        "root_path": "",
        "headers": [],
        "query_string": b"",
    }
    return next((r for r in routes if r.matches(dict(scope))[0] == Match.FULL), None)


@pytest.mark.parametrize("acl", [False, True])
def test_the_index_picks_the_route_the_search_picks(acl: bool) -> None:
    app = create_app(Settings(database_url="postgresql://u@127.0.0.1:1/none", acl_enabled=acl))
    # The router's requests go through the index (what it calls is what it bound when made).
    assert isinstance(app.router, IndexedRouter)
    assert getattr(app.router.middleware_stack, "__func__", None) is IndexedRouter.app
    routes = app.router.routes
    index = RouteIndex(routes)
    paths = set(EXTRA)
    for route in routes:
        if isinstance(path := getattr(route, "path", None), str):
            for fill in FILLS:
                filled = re.sub(r"\{[^}]+\}", fill, path)
                paths |= {filled, filled + "/more"}
    found = 0
    for path in sorted(paths):
        for method in ("GET", "PUT", "POST", "DELETE"):
            expected = _first(routes, path, method)
            assert _first(index.candidates(path), path, method) is expected, (path, method)
            found += expected is not None
    assert found > len(routes)  # the paths reach the routes
    # Most paths try a handful of routes, not all of them.
    assert len(index.candidates("/v1/node/n0")) < len(routes) // 4


async def _endpoint() -> None:
    pass


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/v1/node/{node_id}", ("v1", "node")),
        ("/v1/nodes", ("v1", "nodes")),
        ("/v1/job/{job_id:path}", ("v1", "job")),
        ("/v1/{what}", None),
        ("/v1/no{de}", None),
        ("/ui", None),
        ("/", None),
    ],
)
def test_route_key(path: str, key: tuple[str, str] | None) -> None:
    assert route_key(Route(path, _endpoint)) == key


@pytest.mark.parametrize(
    ("path", "key"),
    [("/v1/node/n0", ("v1", "node")), ("/v1/nodes", ("v1", "nodes")), ("/v1", None), ("/", None)],
)
def test_path_key(path: str, key: tuple[str, str] | None) -> None:
    assert path_key(path) == key
